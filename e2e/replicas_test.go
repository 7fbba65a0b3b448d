//go:build linux

package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two serve -listen replicas behind a real nginx running the
// configuration of docs/deploy.md. Each subject's classic session and
// modern requests all reach one replica, and subjects spread over both.
// SIGKILL of one replica ends its backends; its clients' calls in flight
// fail at once, an old session's next request fails, and a new session
// (classic) or the next request (modern) gets a fresh instance on the
// other replica. No backend process is left at the end.
func TestReplicasBehindNginx(t *testing.T) {
	bin := nginxBinary(t)
	issuer := fixture.NewIssuer(t)
	var reps []*replica
	t.Cleanup(func() { // after every replica stopped
		for _, r := range reps {
			for _, pid := range r.started(t) {
				if running(pid) {
					t.Errorf("backend %d of %s still runs after the test", pid, r.name)
				}
			}
		}
	})
	reps = []*replica{startReplica(t, "replica 0", issuer), startReplica(t, "replica 1", issuer)}
	url := startNginx(t, bin, reps)

	// Subjects until each replica serves one: each subject's classic
	// session and its modern requests all reach one replica.
	var on [2][]*subject
	for i := 0; len(on[0]) == 0 || len(on[1]) == 0; i++ {
		if i == 40 {
			t.Fatalf("40 subjects, and %d on replica 0, %d on replica 1: nginx does not spread subjects", len(on[0]), len(on[1]))
		}
		s := newSubject(t, url, issuer, fmt.Sprintf("user%d", i))
		s.classic = s.connect(t, conn.ClassicProtocolVersion)
		s.classicPID = onePID(t, s.classic, s.name+"'s classic session")
		s.modern = s.connect(t, "")
		s.modernPID = onePID(t, s.modern, s.name+"'s modern requests")
		c, m := whose(t, reps, s.classicPID), whose(t, reps, s.modernPID)
		if c != m {
			t.Fatalf("%s: its classic session is served by replica %d, its modern requests by replica %d", s.name, c, m)
		}
		if s.classicPID == reps[c].shared(t) || s.modernPID == reps[c].shared(t) {
			t.Fatalf("%s is served by the shared instance of replica %d, not its own", s.name, c)
		}
		on[c] = append(on[c], s)
	}
	victim, survivor := reps[0], reps[1]
	a := on[0][0]

	// a's calls in flight on both eras when its replica is killed: the
	// classic call waits on its elicitation, the modern one between its
	// round trips.
	type failure struct {
		what string
		err  error
	}
	calls := make(chan failure, 2)
	var modernGot string
	for what, sess := range map[string]*mcp.ClientSession{"classic": a.classic, "modern": a.modern} {
		go func() {
			got, err := callTool(sess, "ask")
			if what == "modern" {
				modernGot = got
			}
			calls <- failure{a.name + "'s " + what + " call in flight on the killed replica", err}
		}()
	}
	for range 2 {
		select {
		case <-a.asked:
		case <-time.After(wait):
			t.Fatalf("%s's calls of ask were not asked for input within %v", a.name, wait)
		}
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Once its port refuses connections, nginx takes the other replica.
	awaitRefused(t, victim.addr)
	close(a.release)
	// The classic call dies with its session. The modern one carries its
	// round in its next request (2026-07-28 has no session): the server's
	// input request passed through to the client, whose answer nginx
	// takes to the survivor, where a's new instance serves it.
	for range 2 {
		f := <-calls
		if strings.Contains(f.what, "modern") {
			if f.err != nil || modernGot != "accept "+a.name {
				t.Errorf("%s: %q, %v; want it finished on the survivor", f.what, modernGot, f.err)
			}
			continue
		}
		wantCleanError(t, f.what, f.err)
	}
	for _, pid := range victim.started(t) {
		awaitStopped(t, pid, "a backend of the killed replica")
	}

	// The survivor's clients keep their instances.
	for _, s := range on[1] {
		if got := onePID(t, s.classic, s.name+"'s classic session"); got != s.classicPID {
			t.Errorf("%s's classic session moved from backend %d to %d", s.name, s.classicPID, got)
		}
		if got := onePID(t, s.modern, s.name+"'s modern requests"); got != s.modernPID {
			t.Errorf("%s's modern requests moved from backend %d to %d", s.name, s.modernPID, got)
		}
	}

	// a's old session fails; a new one, and a's next modern request, get
	// fresh instances on the survivor.
	_, err := readPID(a.classic)
	wantCleanError(t, a.name+"'s old session after its replica was killed", err)
	seen := slices.Concat(victim.started(t), survivor.started(t))
	for what, sess := range map[string]*mcp.ClientSession{
		"classic session": a.connect(t, conn.ClassicProtocolVersion),
		"modern requests": a.modern,
	} {
		pid := onePID(t, sess, a.name+"'s new "+what)
		if what == "modern requests" {
			// Started by the modern call's last round, above.
			seen = victim.started(t)
		}
		if whose(t, reps, pid) != 1 || slices.Contains(seen, pid) {
			t.Errorf("%s's new %s are served by backend %d, want a new one of replica 1 (started before: %v)", a.name, what, pid, seen)
		}
		if got, err := callTool(sess, "ask"); err != nil || got != "accept "+a.name {
			t.Errorf("%s's new %s: ask answered %q, %v", a.name, what, got, err)
		}
	}
}

// The one affinity key is the same in docs/deploy.md's nginx
// configuration, its ingress-nginx Ingress and the Helm chart's.
func TestDocumentedAffinityKeysAgree(t *testing.T) {
	key := affinityKey(t)
	want := "nginx.ingress.kubernetes.io/upstream-hash-by: " + strconv.Quote(key)
	for _, path := range []string{"../docs/deploy.md", "../deploy/helm/mcpfsm/values.yaml"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), want); n != 1 {
			t.Errorf("%s has %q %d times, want once (the key of the nginx configuration)", path, want, n)
		}
	}
}

// nginxBinary is the nginx executable. Without one the test skips, or
// fails when MCPFSM_REQUIRE_NGINX is set (as in CI).
func nginxBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr == nil {
			return "/usr/sbin/nginx"
		}
		if os.Getenv("MCPFSM_REQUIRE_NGINX") != "" {
			t.Fatal("nginx is not installed (MCPFSM_REQUIRE_NGINX is set): apt-get install nginx")
		}
		t.Skip("nginx is not installed: apt-get install nginx")
	}
	return bin
}

// documentedNginx is the nginx configuration of docs/deploy.md (its one
// nginx block), listening on listen, with its upstream's server lines
// replaced by one per replica address.
func documentedNginx(t *testing.T, listen string, replicas []string) string {
	t.Helper()
	conf := deployNginxBlock(t)
	listenLine := regexp.MustCompile(`(?m)^(\s*)listen\s+[^;]*;`)
	if n := len(listenLine.FindAllString(conf, -1)); n != 1 {
		t.Fatalf("docs/deploy.md's nginx block has %d listen lines, want 1", n)
	}
	conf = listenLine.ReplaceAllString(conf, "${1}listen "+listen+";")
	serverLine := regexp.MustCompile(`(?m)^(\s*)server\s+[^{;]*;\n`)
	at := serverLine.FindAllStringSubmatchIndex(conf, -1)
	if len(at) == 0 {
		t.Fatal("docs/deploy.md's nginx block has no upstream server line")
	}
	indent := conf[at[0][2]:at[0][3]]
	var servers strings.Builder
	for _, r := range replicas {
		fmt.Fprintf(&servers, "%sserver %s;\n", indent, r)
	}
	return conf[:at[0][0]] + servers.String() + serverLine.ReplaceAllString(conf[at[0][0]:], "")
}

// deployNginxBlock is docs/deploy.md's one fenced nginx block.
func deployNginxBlock(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```nginx\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/deploy.md has %d nginx blocks, want 1", len(blocks))
	}
	return blocks[0][1]
}

// affinityKey is the variable docs/deploy.md's nginx configuration
// hashes.
func affinityKey(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*hash\s+(\S+)\s+consistent;`).FindAllStringSubmatch(deployNginxBlock(t), -1)
	if len(m) != 1 {
		t.Fatalf("docs/deploy.md's nginx block has %d 'hash ... consistent' lines, want 1", len(m))
	}
	return m[0][1]
}

// startNginx starts nginx on loopback with the documented configuration
// in front of reps, and returns its MCP endpoint's URL. It runs as one
// process of the test's user, everything in a directory of the test's
// (a master running as root would start its workers as nobody, who
// cannot enter that directory); it is stopped at the end of the test.
func startNginx(t *testing.T, bin string, reps []*replica) string {
	t.Helper()
	var addrs []string
	for _, r := range reps {
		addrs = append(addrs, r.addr)
	}
	// nginx binds a port the test found free; another process may take it
	// first, which nginx reports, and the test takes another.
	for attempt := 1; ; attempt++ {
		addr, err := tryNginx(t, bin, addrs)
		if err == nil {
			return "http://" + addr + "/mcp"
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 3 {
			t.Fatal(err)
		}
	}
}

// tryNginx starts nginx on a free loopback port in front of addrs and
// returns the port's address once nginx answers there.
func tryNginx(t *testing.T, bin string, addrs []string) (string, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	dir := t.TempDir()
	site := filepath.Join(dir, "mcpfsm.conf")
	if err := os.WriteFile(site, []byte(documentedNginx(t, addr, addrs)), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	main := fmt.Sprintf(`master_process off;
error_log %[1]q info;
events { worker_connections 512; }
http {
    log_format replica '$request_method $request_uri $status $upstream_addr $upstream_status session=$http_mcp_session_id';
    access_log %[2]q replica;
    client_body_temp_path %[3]q;
    proxy_temp_path %[4]q;
    fastcgi_temp_path %[5]q;
    uwsgi_temp_path %[6]q;
    scgi_temp_path %[7]q;
    include %[8]q;
}
`, filepath.Join(dir, "error.log"), filepath.Join(dir, "access.log"), filepath.Join(dir, "body"), filepath.Join(dir, "proxy"),
		filepath.Join(dir, "fastcgi"), filepath.Join(dir, "uwsgi"), filepath.Join(dir, "scgi"), site)
	if err := os.WriteFile(conf, []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-p", dir, "-c", conf, "-g", "daemon off; pid " + filepath.Join(dir, "nginx.pid") + ";"}
	if out, err := exec.Command(bin, append([]string{"-t", "-q"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s\n%s", err, out, main)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	logs := func() string {
		errLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		access, _ := os.ReadFile(filepath.Join(dir, "access.log"))
		return fmt.Sprintf("error.log:\n%s\naccess.log:\n%s", errLog, access)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(wait):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Log("nginx's " + logs())
		}
	})
	// nginx answers once it has bound the port: /healthz, from a replica.
	deadline := time.Now().Add(wait)
	for {
		resp, err := (&http.Client{Timeout: wait}).Get("http://" + addr + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return "", fmt.Errorf("GET /healthz through nginx: %s\n%s", resp.Status, logs())
			}
			return addr, nil
		}
		select {
		case <-exited:
			if out := stderr.String() + logs(); strings.Contains(out, "Address already in use") {
				return "", fmt.Errorf("nginx on %s: %w", addr, syscall.EADDRINUSE)
			}
			return "", fmt.Errorf("nginx exited: %v\n%s\n%s", cmd.ProcessState, stderr.String(), logs())
		default:
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("nginx did not answer on %s within %v: %v\n%s", addr, wait, err, logs())
		}
		time.Sleep(10 * time.Millisecond) // nginx's bind, seen from outside it
	}
}

// replica is one serve -listen whose one server, fx, is the fixture
// server with its session features, each process's PID appended to
// pids.
type replica struct {
	name string
	cmd  *exec.Cmd
	addr string // host:port
	pids string
}

func startReplica(t *testing.T, name string, issuer *fixture.Issuer) *replica {
	t.Helper()
	dir := t.TempDir()
	r := &replica{name: name, pids: filepath.Join(dir, "pids")}
	cfg := filepath.Join(dir, "servers.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"fx": {"command": %q, "args": ["-session", "-pidlog", %q]}}}`,
		fixture.Build(t), r.pids), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, url := startServe(t, "serve", "-config", cfg, "-names", "raw", "-listen", "127.0.0.1:0",
		"-oauth-issuer", issuer.URL, "-oauth-resource", isolatedResource)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd, r.addr = cmd, u.Host
	return r
}

// started is the PIDs of the backend processes r started so far.
func (r *replica) started(t *testing.T) []int { return fixture.PIDs(t, r.pids) }

// shared is the PID of r's shared instance, its first process.
func (r *replica) shared(t *testing.T) int {
	t.Helper()
	pids := r.started(t)
	if len(pids) == 0 {
		t.Fatalf("%s has started no backend", r.name)
	}
	return pids[0]
}

// whose is the index of the replica that started pid.
func whose(t *testing.T, reps []*replica, pid int) int {
	t.Helper()
	for i, r := range reps {
		if slices.Contains(r.started(t), pid) {
			return i
		}
	}
	t.Fatalf("backend %d was started by no replica", pid)
	return -1
}

// subject is one OAuth subject and its clients through nginx. Its
// elicitations report on asked and are answered once release is closed.
type subject struct {
	name, url, token      string
	classic, modern       *mcp.ClientSession
	classicPID, modernPID int
	asked                 chan struct{}
	release               chan struct{}
}

func newSubject(t *testing.T, url string, issuer *fixture.Issuer, name string) *subject {
	return &subject{name: name, url: url, token: issuer.Token(t, isolatedResource, name, "mcp"),
		asked: make(chan struct{}, 2), release: make(chan struct{})}
}

// connect connects s on protocol ("" for the SDK's default, 2026-07-28).
func (s *subject) connect(t *testing.T, protocol string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: s.name}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case s.asked <- struct{}{}:
			default:
			}
			select {
			case <-s.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": s.name}}, nil
		},
	})
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: fixture.Bearer(s.token)}, opts)
	if err != nil {
		t.Fatalf("%s connects on %q: %v", s.name, protocol, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return sess
}

// onePID reads res://pid through sess four times, each a request of its
// own, and returns the PID of the backend that answered; it fails t
// unless one backend answered all four.
func onePID(t *testing.T, sess *mcp.ClientSession, what string) int {
	t.Helper()
	var pids []int
	for range 4 {
		pid, err := readPID(sess)
		if err != nil {
			t.Fatalf("%s: read res://pid: %v", what, err)
		}
		pids = append(pids, pid)
	}
	if len(slices.Compact(slices.Clone(pids))) != 1 {
		t.Fatalf("%s reached backends %v, want one", what, pids)
	}
	return pids[0]
}

func readPID(sess *mcp.ClientSession) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: "res://pid"})
	if err != nil {
		return 0, err
	}
	if len(res.Contents) != 1 {
		return 0, fmt.Errorf("%d contents", len(res.Contents))
	}
	return strconv.Atoi(res.Contents[0].Text)
}

// callTool calls tool through sess and returns its text; a tool error
// result is an error.
func callTool(sess *mcp.ClientSession, tool string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("tool error: %s", b.String())
	}
	return b.String(), nil
}

// wantCleanError fails t unless err is an error that came before its
// deadline.
func wantCleanError(t *testing.T, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s succeeded, want an error", what)
	case errors.Is(err, context.DeadlineExceeded):
		t.Errorf("%s: no answer within %v: %v", what, wait, err)
	default:
		t.Logf("%s: %v", what, err)
	}
}

// running reports whether pid is a process that has not ended. A zombie
// has ended: a backend of a killed replica is an orphan, which this
// machine's init may never reap.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')') // the state follows the command
	if i < 0 || i+2 >= len(b) {
		return true
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// awaitRefused waits until a connection to addr is refused.
func awaitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		c, err := net.DialTimeout("tcp", addr, wait)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return
		}
		if err == nil {
			_ = c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still accepts connections %v on (%v)", addr, wait, err)
		}
		time.Sleep(10 * time.Millisecond) // a process's end, seen from outside it
	}
}

// awaitStopped waits until the process pid has ended.
func awaitStopped(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs %v on", what, pid, wait)
		}
		time.Sleep(10 * time.Millisecond) // a process's end, seen from outside it
	}
}
