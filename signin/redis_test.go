package signin_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/mcpfsm/mcpfsm/signin"
	"github.com/redis/go-redis/v9"
)

// replicas is a Redis of its own and what the stores on it share.
type replicas struct {
	url string
	key []byte
	raw *redis.Client // reads and alters the values as an intruder would
}

func newReplicas(t *testing.T) *replicas {
	t.Helper()
	url := fixture.StartRedis(t)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(opt)
	t.Cleanup(func() { raw.Close() })
	return &replicas{url: url, key: newKey(), raw: raw}
}

func newKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// open is one replica's store; it is closed at the end of the test
// unless the test closes it first.
func (r *replicas) open(t *testing.T, key []byte, ttl time.Duration) *signin.RedisStore {
	t.Helper()
	s, err := signin.OpenRedis(signin.RedisConfig{URL: r.url, Key: key, LockTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { s.Close() }) })
	return s
}

// values returns every key and value in Redis.
func (r *replicas) values(t *testing.T) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	keys, err := r.raw.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		switch typ := r.raw.Type(ctx, k).Val(); typ {
		case "hash":
			for f, v := range r.raw.HGetAll(ctx, k).Val() {
				out[k+" "+f] = []byte(v)
			}
		case "string":
			out[k] = []byte(r.raw.Get(ctx, k).Val())
		default:
			t.Fatalf("key %s has type %s", k, typ)
		}
	}
	return out
}

// A caller signed in through one replica is signed in on the other: its
// supervisor, waiting in needs-authorization on a clock that never
// moves, is woken by the other replica's save (pub/sub), comes up, and
// refreshes the credential through its own replica; the first replica
// reads the rotated tokens. A replica that is gone loses nothing.
func TestRedisStoreSharedByReplicas(t *testing.T) {
	as := fixture.NewAuthServer(t)
	r := newReplicas(t)
	a, b := r.open(t, r.key, 0), r.open(t, r.key, 0)

	s := supervise(t, as, b)
	s.rec.Expect(t, waitLimit, conn.NeedsAuthorization)
	c := login(t, as, a, newBrowser(t, false))
	// Only the pub/sub wake-up can bring it up: the poll timer is on a
	// mock clock the test does not move.
	s.rec.Expect(t, waitLimit, conn.Connecting, conn.Established)
	if got, err := s.whoami(t); err != nil || !strings.Contains(got, "user-"+c.Client) {
		t.Fatalf("whoami through the second replica = %q, %v", got, err)
	}

	as.ExpireAccess()
	if got, err := s.whoami(t); err != nil || !strings.Contains(got, "user-"+c.Client) {
		t.Fatalf("whoami after expiry = %q, %v", got, err)
	}
	if n := as.Refreshes(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	ctx := context.Background()
	now, err := a.Find(ctx, "", as.Resource)
	if err != nil || now == nil || now.RefreshToken == c.RefreshToken || now.AccessToken == c.AccessToken {
		t.Fatalf("the first replica after the second refreshed: %v, %v; want the rotated tokens", now != nil, err)
	}

	// Both replicas go away; a new one finds the credential.
	a.Close()
	c2 := r.open(t, r.key, 0)
	got, err := c2.Find(ctx, "", as.Resource)
	if err != nil || got == nil || got.AccessToken != now.AccessToken {
		t.Fatalf("a new replica after the first closed: %v, %v", got != nil, err)
	}
	if list, err := c2.List(ctx); err != nil || len(list) != 1 {
		t.Errorf("List = %d credentials, %v; want 1", len(list), err)
	}
	if n, err := c2.Delete(ctx, "", as.Resource); err != nil || n != 1 {
		t.Errorf("Delete = %d, %v; want 1", n, err)
	}
	if got, err := b.Find(ctx, "", as.Resource); err != nil || got != nil {
		t.Errorf("Find through the other replica after Delete = %v, %v; want none", got != nil, err)
	}
}

// Nothing in Redis reveals a token, a subject, the resource, the issuer
// or the client; the values do not decrypt with another key, and a
// replica with another key is told so instead of finding nothing.
func TestRedisStoreEncryptsEverything(t *testing.T) {
	as := fixture.NewAuthServer(t)
	r := newReplicas(t)
	a := r.open(t, r.key, 0)
	c := login(t, as, a, newBrowser(t, false))
	ctx := context.Background()
	if err := a.Save(ctx, &signin.Credential{Key: signin.Key{Subject: "alice@example.com", Issuer: as.Issuer, Resource: as.Resource, Client: c.Client},
		AccessToken: "at-alice-secret", RefreshToken: "rt-alice-secret", TokenURL: c.TokenURL, Saved: time.Now()}); err != nil {
		t.Fatal(err)
	}
	vals := r.values(t)
	if len(vals) < 3 {
		t.Fatalf("Redis holds %d values, want the key check and two credentials", len(vals))
	}
	secrets := append(as.Secrets(), "alice", "at-alice-secret", "rt-alice-secret", as.Resource, as.Issuer, c.Client,
		strings.TrimPrefix(as.Resource, "http://"), strings.TrimPrefix(as.Issuer, "http://"))
	for k, v := range vals {
		for _, sec := range secrets {
			if sec == "" {
				continue
			}
			if strings.Contains(k, sec) || bytes.Contains(v, []byte(sec)) {
				t.Errorf("Redis key %q or its value holds %q in clear", k, sec)
			}
		}
	}

	other := r.open(t, newKey(), 0)
	decrypted := 0
	for k, v := range vals {
		key, field, ok := strings.Cut(k, " ")
		if !ok {
			continue
		}
		if _, err := a.Decrypt(key, field, v); err != nil {
			t.Errorf("the value of %s does not decrypt with its own key: %v", k, err)
		}
		if _, err := other.Decrypt(key, field, v); err == nil {
			t.Errorf("the value of %s decrypts with another key", k)
		}
		decrypted++
	}
	if decrypted != 2 {
		t.Errorf("%d credential values checked, want 2", decrypted)
	}
	_, err := other.Find(ctx, "", as.Resource)
	if !errors.Is(err, signin.ErrWrongKey) || !strings.Contains(err.Error(), signin.CredentialKeyEnv) || !strings.Contains(err.Error(), "same key") {
		t.Errorf("Find with another key: %v; want ErrWrongKey naming %s and the fix", err, signin.CredentialKeyEnv)
	}
}

// A value that is altered, cut short, or copied under another caller's
// name is an error naming the Redis key and the fix, never a panic and
// never another caller's credential.
func TestRedisStoreCorruptValues(t *testing.T) {
	r := newReplicas(t)
	a := r.open(t, r.key, 0)
	ctx := context.Background()
	mk := func(sub string) *signin.Credential {
		return &signin.Credential{Key: signin.Key{Subject: sub, Issuer: "https://as.example", Resource: "https://mcp.example/mcp", Client: "c1"},
			AccessToken: "at-" + sub, TokenURL: "https://as.example/token", Saved: time.Now()}
	}
	for _, sub := range []string{"alice", "bob"} {
		if err := a.Save(ctx, mk(sub)); err != nil {
			t.Fatal(err)
		}
	}
	var keys, fields []string
	var vals [][]byte
	for k, v := range r.values(t) {
		if key, field, ok := strings.Cut(k, " "); ok {
			keys, fields, vals = append(keys, key), append(fields, field), append(vals, v)
		}
	}
	if len(keys) != 2 {
		t.Fatalf("%d credential values, want 2", len(keys))
	}

	// bob's value copied over alice's: it does not decrypt there.
	if err := r.raw.HSet(ctx, keys[0], fields[0], vals[1]).Err(); err != nil {
		t.Fatal(err)
	}
	errs := 0
	for _, sub := range []string{"alice", "bob"} {
		c, err := a.Find(ctx, sub, "https://mcp.example/mcp")
		switch {
		case err != nil:
			errs++
			if !errors.Is(err, signin.ErrCorrupt) || !strings.Contains(err.Error(), keys[0]) || !strings.Contains(err.Error(), "sign in again") {
				t.Errorf("Find of a swapped value: %v; want ErrCorrupt naming %s and the fix", err, keys[0])
			}
		case c == nil || c.AccessToken != "at-"+sub:
			t.Errorf("Find(%s) gave another caller's credential", sub)
		}
	}
	if errs != 1 {
		t.Errorf("%d of 2 Finds failed after a value was swapped; want 1", errs)
	}

	for name, v := range map[string][]byte{"garbage": []byte("not a value"), "empty": nil, "short": vals[0][:10],
		"flipped": append(append([]byte(nil), vals[0][:len(vals[0])-1]...), vals[0][len(vals[0])-1]^1)} {
		if err := r.raw.HSet(ctx, keys[0], fields[0], v).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := a.List(ctx)
		if !errors.Is(err, signin.ErrCorrupt) || !strings.Contains(err.Error(), keys[0]) {
			t.Errorf("List with a %s value: %v; want ErrCorrupt naming %s", name, err, keys[0])
		}
	}
}

// Two replicas meeting one expired credential at once make one refresh
// request: while the first replica's refresh is held at the token
// endpoint, the second tries the lock in Redis, fails, waits, and then
// takes the first's token.
func TestRedisStoreOneRefreshAcrossReplicas(t *testing.T) {
	as := fixture.NewAuthServer(t)
	r := newReplicas(t)
	a, b := r.open(t, r.key, 0), r.open(t, r.key, 0)
	c := login(t, as, a, newBrowser(t, false))
	c.Expiry = time.Now().Add(-time.Minute) // expired on every replica's clock
	ctx := context.Background()
	if err := a.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	token := func(store signin.Store) (string, error) {
		h := signin.NewHandler(signin.HandlerConfig{Server: "notes", Resource: as.Resource, Store: store, Clock: clock.New()})
		ts, err := h.TokenSource(ctx)
		if err != nil || ts == nil {
			return "", fmt.Errorf("TokenSource: %v (source %v)", err, ts != nil)
		}
		tok, err := ts.Token()
		if err != nil {
			return "", err
		}
		return tok.AccessToken, nil
	}
	var refreshes atomic.Int32
	second := make(chan struct{})
	fromB := make(chan string, 1)
	as.BeforeRefresh = func() {
		if refreshes.Add(1) != 1 {
			close(second) // the second replica refreshed too: the lock failed
			return
		}
		// Hold the first refresh until the second replica has tried the
		// lock (a SET in Redis) or has sent its own refresh.
		sets := setCalls(t, r.raw)
		go func() {
			tok, err := token(b)
			if err != nil {
				t.Errorf("second replica: %v", err)
			}
			fromB <- tok
		}()
		deadline := time.Now().Add(waitLimit)
		for setCalls(t, r.raw) == sets && time.Now().Before(deadline) {
			select {
			case <-second:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	tokA, err := token(a)
	if err != nil {
		t.Errorf("first replica: %v", err)
	}
	var tokB string
	select {
	case tokB = <-fromB:
	case <-time.After(waitLimit):
		t.Fatal("the second replica never asked for a token")
	}
	if n := as.Refreshes(); n != 1 {
		t.Errorf("%d refresh requests from two replicas meeting one expired token, want 1", n)
	}
	if tokA != tokB || tokA == c.AccessToken {
		t.Errorf("the replicas use different tokens (or the expired one); want both on the one refreshed token")
	}
}

// setCalls is how many SET commands Redis has run (the refresh locks'
// tries).
func setCalls(t *testing.T, raw *redis.Client) int {
	info, err := raw.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Error(err)
		return -1
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// A replica that dies holding a refresh lock holds it no longer than
// LockTTL; its late unlock does not release the lock another replica
// holds since.
func TestRedisStoreLockOwnedAndExpiring(t *testing.T) {
	r := newReplicas(t)
	ttl := 300 * time.Millisecond
	a, b := r.open(t, r.key, ttl), r.open(t, r.key, ttl)
	k := signin.Key{Issuer: "https://as.example", Resource: "https://mcp.example/mcp", Client: "c1"}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	unlockA, err := a.Lock(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	unlockB, err := b.Lock(ctx, k) // waits for a's lock to expire
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < ttl/2 {
		t.Errorf("the second replica took the lock after %v, while the first held it for %v", d, ttl)
	}
	unlockA() // late: the lock is b's now
	locks, err := r.raw.Keys(ctx, signin.DefaultRedisPrefix+"lock:*").Result()
	if err != nil || len(locks) != 1 {
		t.Fatalf("locks after a late unlock by a former owner: %v, %v; want b's", locks, err)
	}
	// A third try waits; b's unlock lets it in at once (its
	// announcement, not the expiry).
	got := make(chan error, 1)
	go func() {
		u, err := a.Lock(ctx, k)
		if err == nil {
			u()
		}
		got <- err
	}()
	unlockB()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Lock never returned after the holder unlocked")
	}
	a.Close() // dies holding nothing; b goes on
	if _, err := b.Lock(ctx, k); err != nil {
		t.Fatal(err)
	}
}

// The key comes from the environment; a missing or malformed one is an
// error naming the variable and the fix, never its value. A store URL's
// password is not in an error either.
func TestCredentialKeyAndURLErrors(t *testing.T) {
	t.Setenv(signin.CredentialKeyEnv, "")
	if _, err := signin.KeyFromEnv(); err == nil || !strings.Contains(err.Error(), signin.CredentialKeyEnv+" is not set") || !strings.Contains(err.Error(), "openssl rand -base64 32") {
		t.Errorf("missing key: %v", err)
	}
	short := base64.StdEncoding.EncodeToString([]byte("sixteen byte key"))
	t.Setenv(signin.CredentialKeyEnv, short)
	if _, err := signin.KeyFromEnv(); err == nil || !strings.Contains(err.Error(), "16 bytes, want 32") || strings.Contains(err.Error(), short) {
		t.Errorf("short key: %v", err)
	}
	t.Setenv(signin.CredentialKeyEnv, "not base64 at all!")
	if _, err := signin.KeyFromEnv(); err == nil || !strings.Contains(err.Error(), "not base64") || strings.Contains(err.Error(), "at all") {
		t.Errorf("malformed key: %v", err)
	}
	good := base64.StdEncoding.EncodeToString(newKey())
	t.Setenv(signin.CredentialKeyEnv, good)
	if k, err := signin.KeyFromEnv(); err != nil || len(k) != 32 {
		t.Errorf("good key: %d bytes, %v", len(k), err)
	}
	for _, u := range []string{"http://:hunter2@redis.example:6379/0", "redis://:hunter2@redis.example:6379/x", "redis://:hunter2@[::1:6379/0"} {
		_, err := signin.OpenRedis(signin.RedisConfig{URL: u, Key: newKey()})
		if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "redis://HOST:PORT/DB") {
			t.Errorf("OpenRedis(%s): %v; want an error with the fix and without the password", strings.ReplaceAll(u, "hunter2", "***"), err)
		}
	}
	if _, err := signin.OpenRedis(signin.RedisConfig{URL: "redis://127.0.0.1:1/0", Key: []byte("short")}); err == nil || !strings.Contains(err.Error(), signin.CredentialKeyEnv) {
		t.Errorf("OpenRedis with a short key: %v", err)
	}
}
