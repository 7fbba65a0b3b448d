package conn

// ReconnectWaiters returns how many Reconnect calls wait for the attempt
// in flight, read on the supervisor's loop.
func ReconnectWaiters(s *Supervisor) int {
	n := make(chan int, 1)
	s.post(func() { n <- len(s.waiters) })
	return <-n
}
