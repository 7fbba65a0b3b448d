package signin

// Decrypt opens the raw value v of the hash key's field, as Find does.
func (s *RedisStore) Decrypt(key, field string, v []byte) ([]byte, error) {
	return s.open(v, key+"\x00"+field)
}
