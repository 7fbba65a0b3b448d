package signin

import "time"

// Decrypt opens the raw value v of the hash key's field, as Find does.
func (s *RedisStore) Decrypt(key, field string, v []byte) ([]byte, error) {
	return s.open(v, key+"\x00"+field)
}

// ExpectForTest waits on r for the redirect carrying state, for subject:
// the channel gets the code, or is closed when ttl passes.
func ExpectForTest(r *Redirects, state, subject string, ttl time.Duration) (<-chan string, func()) {
	ch, done := r.expect(state, subject, ttl)
	out := make(chan string, 1)
	go func() {
		res, ok := <-ch
		if ok && res.res != nil {
			out <- res.res.Code
		}
		close(out)
	}()
	return out, done
}
