package postgres

// StopHeartbeat stops the node's heartbeat as if its process paused or
// died: its leases expire.
func (s *Store) StopHeartbeat() { s.stopHeartbeat() }
