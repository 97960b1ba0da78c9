"""What happens to a record after it is stored: extraction (and its worker), correction, forgetting."""
