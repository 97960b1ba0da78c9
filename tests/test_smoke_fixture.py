def test_a_recorded_event_reads_back_through_the_in_process_client(client):
    client.ok("memory_record", event_id="e1", text="hello", role="user", source="chat")
    assert client.ok("memory_read", record_id="e1")["source_page"]["text"] == "hello"
