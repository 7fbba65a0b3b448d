package signin

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpfsm/mcpfsm/internal/redact"
	"github.com/redis/go-redis/v9"
)

// CredentialKeyEnv is the environment variable that holds the key a
// [RedisStore] encrypts credentials with: 32 random bytes in base64
// (openssl rand -base64 32). Every replica sharing a Redis needs the same
// key; it is never stored in Redis.
const CredentialKeyEnv = "MCPFSM_CREDENTIAL_KEY"

// DefaultRedisPrefix is the prefix of a [RedisStore]'s Redis keys.
const DefaultRedisPrefix = "mcpfsm:credentials:"

// DefaultLockTTL is how long a [RedisStore]'s refresh lock lives when its
// holder dies without releasing it: past the refresh's own timeout.
const DefaultLockTTL = time.Minute

// ErrWrongKey is matched by the error of a [RedisStore] whose key is not
// the one the credentials in its Redis were encrypted with.
var ErrWrongKey = errors.New("wrong credential key")

// KeyFromEnv reads the credential key from $MCPFSM_CREDENTIAL_KEY. The
// error names the variable and the fix, never the value.
func KeyFromEnv() ([]byte, error) {
	v, ok := os.LookupEnv(CredentialKeyEnv)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("%s is not set: the redis credential store encrypts every credential with it; "+
			"set it to 32 random bytes in base64 (openssl rand -base64 32), the same on every replica", CredentialKeyEnv)
	}
	return ParseKey(v)
}

// ParseKey decodes a credential key: 32 bytes in standard or URL-safe
// base64, padded or not.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return nil, fmt.Errorf("%s decodes to %d bytes, want 32: set it to 32 random bytes in base64 (openssl rand -base64 32)", CredentialKeyEnv, len(b))
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("%s is not base64: set it to 32 random bytes in base64 (openssl rand -base64 32)", CredentialKeyEnv)
}

// RedisConfig configures a [RedisStore].
type RedisConfig struct {
	// URL is the Redis server: redis://[:PASSWORD@]HOST:PORT/DB,
	// rediss://... (TLS) or unix:///PATH?db=DB.
	URL string
	// Key is the 32-byte key every value is encrypted with (AES-256-GCM);
	// see [KeyFromEnv].
	Key []byte
	// Prefix is the prefix of the store's Redis keys; empty means
	// DefaultRedisPrefix.
	Prefix string
	// LockTTL bounds a refresh lock whose holder died; zero means
	// DefaultLockTTL.
	LockTTL time.Duration
}

// RedisStore is a [Store] in Redis, for several replicas of mcpfsm serve:
// a credential saved through one is found by all, a refresh lock is held
// across them, and a change made through one wakes the handlers of all
// ([RedisStore.Changed], over Redis pub/sub).
//
// Every value is encrypted with AES-256-GCM under a key from the
// environment ([CredentialKeyEnv]), bound to the Redis key it is stored
// under, so that a value copied under another caller's key does not
// decrypt. Key names are HMACs of the credential's subject, resource,
// issuer and client: they reveal none of them. The encryption key is
// never written to Redis; a check value encrypted with it is, so that a
// replica with another key fails with [ErrWrongKey] instead of finding
// nothing.
//
// Layout, under the prefix: c:NAME is a hash per (subject, resource)
// whose fields (one per issuer and client) hold the credentials;
// lock:NAME a refresh lock; keycheck the check value; changed the pub/sub
// channel.
type RedisStore struct {
	rdb     *redis.Client
	aead    cipher.AEAD
	names   []byte // HMAC key of the key names
	prefix  string
	lockTTL time.Duration
	where   string // the URL without credentials, for errors

	ps   *redis.PubSub
	done chan struct{} // closed when the subscriber goroutine returns

	mu      sync.Mutex
	changed chan struct{}
	locks   map[string]*sync.Mutex
	checked bool
}

var _ Store = (*RedisStore)(nil)

// OpenRedis returns a RedisStore for cfg. It checks the URL and the key
// but does not wait for Redis: the first operation reports a server that
// cannot be reached, and [RedisStore.Check] tests it at once. Close it.
func OpenRedis(cfg RedisConfig) (*RedisStore, error) {
	where := redact.URL(cfg.URL)
	opt, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("credential store %s: %v; give redis://HOST:PORT/DB, rediss://HOST:PORT/DB or unix:///PATH?db=DB", where, scrubURL(err, cfg.URL))
	}
	if len(cfg.Key) != 32 {
		return nil, fmt.Errorf("credential store %s: the key has %d bytes, want 32: set %s to 32 random bytes in base64 (openssl rand -base64 32)", where, len(cfg.Key), CredentialKeyEnv)
	}
	enc, err := hkdf.Key(sha256.New, cfg.Key, nil, "mcpfsm credential store: encryption", 32)
	if err != nil {
		return nil, err
	}
	names, err := hkdf.Key(sha256.New, cfg.Key, nil, "mcpfsm credential store: key names", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(enc)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s := &RedisStore{aead: aead, names: names, prefix: cfg.Prefix, lockTTL: cfg.LockTTL, where: where, done: make(chan struct{})}
	if s.prefix == "" {
		s.prefix = DefaultRedisPrefix
	}
	if s.lockTTL <= 0 {
		s.lockTTL = DefaultLockTTL
	}
	opt.DisableIdentity = true // no CLIENT SETINFO: nothing in Redis's logs about mcpfsm's version
	s.rdb = redis.NewClient(opt)
	s.ps = s.rdb.Subscribe(context.Background(), s.prefix+"changed")
	go s.listen(s.ps.ChannelWithSubscriptions())
	return s, nil
}

// scrubURL removes from err's text the URL raw and its user information
// (which may carry a password).
func scrubURL(err error, raw string) string {
	msg := strings.ReplaceAll(err.Error(), raw, redact.URL(raw))
	if i := strings.Index(raw, "://"); i >= 0 {
		authority := raw[i+3:]
		if end := strings.IndexAny(authority, "/?#"); end >= 0 {
			authority = authority[:end]
		}
		if at := strings.LastIndexByte(authority, '@'); at > 0 {
			msg = strings.ReplaceAll(msg, authority[:at], "***")
		}
	}
	return msg
}

// listen wakes Changed's waiters at each change another replica
// publishes, and at each (re)subscription: changes made while the
// connection was down are not missed.
func (s *RedisStore) listen(ch <-chan any) {
	defer close(s.done)
	for range ch {
		s.notify()
	}
}

// Close stops the store's subscription and closes its connections.
func (s *RedisStore) Close() error {
	err := s.ps.Close()
	<-s.done
	return errors.Join(err, s.rdb.Close())
}

// Changed returns a channel closed at the next Save or Delete made
// through any store on the same Redis (and prefix), this process's or
// another replica's, and whenever the subscription is made again after a
// lost connection.
func (s *RedisStore) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

func (s *RedisStore) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// name is the HMAC of parts, in hex: a key name that reveals none of
// them without the key.
func (s *RedisStore) name(parts ...string) string {
	m := hmac.New(sha256.New, s.names)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil)[:20])
}

func (s *RedisStore) hashKey(subject, resource string) string {
	return s.prefix + "c:" + s.name("credential", subject, resource)
}

func (s *RedisStore) field(k Key) string { return s.name("client", k.Issuer, k.Client) }

// seal encrypts b bound to where it is stored (aad).
func (s *RedisStore) seal(b []byte, aad string) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(b)+s.aead.Overhead()+1)
	_, _ = rand.Read(nonce)
	out := s.aead.Seal(nonce, nonce, b, []byte(aad))
	return append([]byte{1}, out...) // format version 1
}

// open decrypts what seal made for aad.
func (s *RedisStore) open(v []byte, aad string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(v) < 1+n+s.aead.Overhead() || v[0] != 1 {
		return nil, errors.New("not a value mcpfsm wrote")
	}
	return s.aead.Open(nil, v[1:1+n], v[1+n:], []byte(aad))
}

const keyCheckText = "mcpfsm credential key check"

// Check reaches Redis and checks the key against the check value stored
// there (storing one when there is none): a replica with another key
// fails with [ErrWrongKey] naming the fix. Every operation checks once.
func (s *RedisStore) Check(ctx context.Context) error {
	s.mu.Lock()
	done := s.checked
	s.mu.Unlock()
	if done {
		return nil
	}
	k := s.prefix + "keycheck"
	if _, err := s.rdb.SetNX(ctx, k, s.seal([]byte(keyCheckText), k), 0).Result(); err != nil {
		return s.redisErr(err)
	}
	v, err := s.rdb.Get(ctx, k).Bytes()
	if err != nil {
		return s.redisErr(err)
	}
	if b, err := s.open(v, k); err != nil || string(b) != keyCheckText {
		return fmt.Errorf("%w: credential store %s: the credentials there were encrypted with another %s; "+
			"give every replica the same key (the one they were written with), or delete the keys %s* to start over (every caller signs in again)",
			ErrWrongKey, s.where, CredentialKeyEnv, s.prefix)
	}
	s.mu.Lock()
	s.checked = true
	s.mu.Unlock()
	return nil
}

// redisErr wraps an error of Redis, naming the store without its password.
func (s *RedisStore) redisErr(err error) error {
	return fmt.Errorf("credential store %s: %w", s.where, err)
}

// corrupt is the error of a value that does not decrypt.
func (s *RedisStore) corrupt(key, field string) error {
	return fmt.Errorf("%w: credential store %s: the value of %s field %s does not decrypt with %s "+
		"(altered, or written with another key); remove it (redis-cli HDEL %s %s, or mcpfsm auth logout NAME -config FILE) and sign in again",
		ErrCorrupt, s.where, key, field, CredentialKeyEnv, key, field)
}

// decode reads the credentials of one hash.
func (s *RedisStore) decode(key string, fields map[string]string) ([]*Credential, error) {
	out := make([]*Credential, 0, len(fields))
	for f, v := range fields {
		b, err := s.open([]byte(v), key+"\x00"+f)
		var c Credential
		if err == nil {
			err = json.Unmarshal(b, &c)
		}
		if err != nil || c.Resource == "" || c.AccessToken == "" {
			return nil, s.corrupt(key, f)
		}
		out = append(out, &c)
	}
	return out, nil
}

func newestFirst(cs []*Credential) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Saved.After(cs[j].Saved) })
}

// Find implements [Store].
func (s *RedisStore) Find(ctx context.Context, subject, resource string) (*Credential, error) {
	if err := s.Check(ctx); err != nil {
		return nil, err
	}
	key := s.hashKey(subject, resource)
	fields, err := s.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, s.redisErr(err)
	}
	cs, err := s.decode(key, fields)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	newestFirst(cs)
	return cs[0], nil
}

// Save implements [Store]: the value replaces the one stored under c's
// Key, and every replica's Changed is woken.
func (s *RedisStore) Save(ctx context.Context, c *Credential) error {
	if err := s.Check(ctx); err != nil {
		return err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	key, field := s.hashKey(c.Subject, c.Resource), s.field(c.Key)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, field, s.seal(b, key+"\x00"+field))
		p.Publish(ctx, s.prefix+"changed", "save")
		return nil
	})
	if err != nil {
		return s.redisErr(err)
	}
	s.notify()
	return nil
}

// Delete implements [Store].
func (s *RedisStore) Delete(ctx context.Context, subject, resource string) (int, error) {
	if err := s.Check(ctx); err != nil {
		return 0, err
	}
	key := s.hashKey(subject, resource)
	var n *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		n = p.HLen(ctx, key)
		p.Del(ctx, key)
		p.Publish(ctx, s.prefix+"changed", "delete")
		return nil
	})
	if err != nil {
		return 0, s.redisErr(err)
	}
	s.notify()
	return int(n.Val()), nil
}

// List implements [Store].
func (s *RedisStore) List(ctx context.Context) ([]*Credential, error) {
	if err := s.Check(ctx); err != nil {
		return nil, err
	}
	var out []*Credential
	iter := s.rdb.Scan(ctx, 0, globEscape(s.prefix)+"c:*", 100).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		fields, err := s.rdb.HGetAll(ctx, key).Result()
		if err != nil {
			return nil, s.redisErr(err)
		}
		cs, err := s.decode(key, fields)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	if err := iter.Err(); err != nil {
		return nil, s.redisErr(err)
	}
	newestFirst(out)
	return out, nil
}

// globEscape escapes the characters SCAN MATCH gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unlockScript deletes the lock only while it holds the caller's token,
// and announces the release to the waiters.
var unlockScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", KEYS[2], "unlock")
	return 1
end
return 0`)

// lockPoll bounds how long a waiter sleeps between tries when it misses
// the release's announcement (the holder died: its lock expires).
const lockPoll = 250 * time.Millisecond

// Lock implements [Store]: a mutex per credential within the process,
// then a lock in Redis (SET NX PX with a random token, released only by
// its owner, expiring after LockTTL if the owner dies). The others wait
// for its release, announced on the changed channel, and then read the
// winner's token.
func (s *RedisStore) Lock(ctx context.Context, k Key) (func(), error) {
	if err := s.Check(ctx); err != nil {
		return nil, err
	}
	name := s.prefix + "lock:" + s.name("lock", k.Subject, k.Issuer, k.Resource, k.Client)
	s.mu.Lock()
	if s.locks == nil {
		s.locks = map[string]*sync.Mutex{}
	}
	m := s.locks[name]
	if m == nil {
		m = &sync.Mutex{}
		s.locks[name] = m
	}
	s.mu.Unlock()
	m.Lock()
	token := rand.Text()
	for {
		wake := s.Changed() // before the try: a release after it wakes the wait
		ok, err := s.rdb.SetNX(ctx, name, token, s.lockTTL).Result()
		if err != nil {
			m.Unlock()
			return nil, s.redisErr(err)
		}
		if ok {
			break
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			m.Unlock()
			return nil, fmt.Errorf("credential store %s: waiting for another replica's refresh: %w", s.where, ctx.Err())
		}
		t.Stop()
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// An error leaves the lock to expire after LockTTL.
		_ = unlockScript.Run(ctx, s.rdb, []string{name, s.prefix + "changed"}, token).Err()
		m.Unlock()
	}, nil
}
