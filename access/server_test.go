package access

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyCutOff is the slow-loris attack on a request body: a client
// sends its header, then one byte every 200 ms of a 1000-byte body. With a
// ReadTimeout of 1 s the server must give up on it within the bound, and an
// event stream opened before must outlive that deadline.
func TestSlowBodyCutOff(t *testing.T) {
	const readTimeout = time.Second
	const bound = readTimeout + 2*time.Second
	cut := make(chan error, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /slow", func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		cut <- err
	})
	streamCut := make(chan struct{})
	streamCtxErr := make(chan error, 1)
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "a")
		w.(http.Flusher).Flush()
		<-streamCut
		streamCtxErr <- r.Context().Err()
		fmt.Fprintln(w, "b")
	})
	srv := NewServer(mux, ServerOptions{ReadTimeout: readTimeout})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()

	stream, err := http.Get("http://" + ln.Addr().String() + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	lines := bufio.NewReader(stream.Body)
	if l, err := lines.ReadString('\n'); err != nil || l != "a\n" {
		t.Fatalf("stream: %q %v", l, err)
	}

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := fmt.Fprintf(c, "POST /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() { // the attack: one byte at a time
		defer close(trickled)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-trickled }()

	select {
	case err := <-cut:
		elapsed := time.Since(start)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("the slow body ended with %v, want a timeout", err)
		}
		if elapsed > bound {
			t.Errorf("the slow body was cut after %v, want within %v", elapsed, bound)
		}
		t.Logf("slow body cut off after %v (ReadTimeout %v)", elapsed.Round(time.Millisecond), readTimeout)
	case <-time.After(bound):
		t.Fatalf("the slow body was not cut off within %v", bound)
	}

	close(streamCut)
	if err := <-streamCtxErr; err != nil {
		t.Errorf("the event stream's context ended after the read deadline: %v", err)
	}
	if l, err := lines.ReadString('\n'); err != nil || l != "b\n" {
		t.Errorf("stream after the deadline: %q %v", l, err)
	}
}

func TestNewServerDefaults(t *testing.T) {
	srv := NewServer(http.NotFoundHandler(), ServerOptions{})
	got := []any{srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout, srv.WriteTimeout, srv.MaxHeaderBytes}
	want := []any{DefaultReadHeaderTimeout, DefaultReadTimeout, DefaultIdleTimeout, time.Duration(0), DefaultMaxHeaderBytes}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("defaults %v, want %v", got, want)
	}
	srv = NewServer(http.NotFoundHandler(), ServerOptions{ReadTimeout: time.Second, MaxHeaderBytes: 100})
	if srv.ReadTimeout != time.Second || srv.MaxHeaderBytes != 100 {
		t.Errorf("options not applied: %v %v", srv.ReadTimeout, srv.MaxHeaderBytes)
	}
}

func TestLimitBody(t *testing.T) {
	readErr := make(chan error, 1)
	h := LimitBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), 1000)
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", 2000))))
	if rw.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("declared 2000 bytes: %d, want 413", rw.Code)
	}
	r := httptest.NewRequest("POST", "/", io.MultiReader(strings.NewReader(strings.Repeat("x", 2000))))
	r.ContentLength = -1 // chunked
	h.ServeHTTP(httptest.NewRecorder(), r)
	var mbe *http.MaxBytesError
	if err := <-readErr; !errors.As(err, &mbe) {
		t.Errorf("undeclared 2000 bytes: read %v, want MaxBytesError", err)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader("small")))
	if err := <-readErr; err != nil {
		t.Errorf("a small body: %v", err)
	}
}

func TestTLSConfig(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, cert, key)
	cfg, err := TLSConfig(cert, key)
	if err != nil || len(cfg.Certificates) != 1 {
		t.Fatalf("TLSConfig: %v", err)
	}
	for _, tc := range []struct{ cert, key, with string }{
		{"", "", "-tls-cert FILE and -tls-key FILE"},
		{cert, "", "without -tls-key"},
		{"", key, "without -tls-cert"},
		{filepath.Join(dir, "nope.pem"), key, "-tls-cert " + filepath.Join(dir, "nope.pem")},
		{key, cert, "-tls-cert"}, // swapped
	} {
		if _, err := TLSConfig(tc.cert, tc.key); err == nil || !strings.Contains(err.Error(), tc.with) {
			t.Errorf("TLSConfig(%q, %q) = %v, want an error with %q", tc.cert, tc.key, err, tc.with)
		}
	}
}

func writeCert(t *testing.T, certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}
