"""session_resume: the budgeted context string and token counting."""
