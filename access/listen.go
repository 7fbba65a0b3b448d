package access

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNeedAuth is returned by [Rule.Listen] for an address that is not
// loopback when the rule has neither a token nor OAuth.
var ErrNeedAuth = errors.New("a non-loopback address needs authentication")

// UnixPrefix marks a unix socket address for [Rule.Listen]: "unix:PATH".
const UnixPrefix = "unix:"

// Listen opens a listener for the rule's surface on addr: "HOST:PORT"
// (TCP) or "unix:PATH" (a unix socket of mode 0600, which only its owner
// can connect to, so it needs no token).
//
// Without a token or OAuth (or with Config.LoopbackOnly) a TCP address
// must be loopback: ":8080" or
// "0.0.0.0:8080" listen on every interface and are refused; a host name
// is resolved first and must name loopback addresses only, and the check
// is made again on the address actually bound.
//
// The listener holds at most Config.MaxConns connections
// (DefaultMaxConns), and at most Config.MaxConnsPerIP of one client
// address; see [NewServer] for what a connection past a cap is answered.
func (r *Rule) Listen(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, UnixPrefix); ok {
		ln, err := listenUnix(path)
		if err != nil {
			return nil, err
		}
		return r.listened(r.limit(ln))
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("access: address %q: %w; use HOST:PORT, e.g. 127.0.0.1:8080, or unix:PATH", addr, err)
	}
	open := !r.Authenticated() || r.cfg.LoopbackOnly
	if open {
		if err := checkLoopback(addr, host); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && open && !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, needAuth(addr, tcp.IP.String()+" is not loopback")
	}
	return r.listened(r.limit(ln))
}

// listened calls Config.Listened.
func (r *Rule) listened(ln net.Listener) (net.Listener, error) {
	if r.cfg.Listened != nil {
		if err := r.cfg.Listened(ln.Addr()); err != nil {
			ln.Close()
			return nil, fmt.Errorf("access: %w", err)
		}
	}
	return ln, nil
}

// checkLoopback refuses host unless it is a loopback address or a name
// resolving to loopback addresses only.
func checkLoopback(addr, host string) error {
	switch {
	case host == "":
		return needAuth(addr, "an empty host listens on every interface")
	case loopbackName(host):
		return nil
	case net.ParseIP(strings.Trim(host, "[]")) != nil:
		return needAuth(addr, host+" is not loopback")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := lookupIP(ctx, host)
	if err != nil {
		return fmt.Errorf("access: -listen %q: %w", addr, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return needAuth(addr, fmt.Sprintf("%s resolves to %s, which is not loopback", host, ip.IP))
		}
	}
	return nil
}

// lookupIP resolves a host name (tests replace it).
var lookupIP = net.DefaultResolver.LookupIPAddr

func needAuth(addr, why string) error {
	return fmt.Errorf("access: refusing to serve on %q (%s): %w; set %s or -token-file, or listen on 127.0.0.1:PORT or unix:PATH",
		addr, why, ErrNeedAuth, EnvToken)
}

// loopbackName reports whether a host name or address is loopback.
func loopbackName(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// listenUnix listens on a unix socket at path with mode 0600. The socket
// is made in a fresh directory of mode 0700 beside path, set to 0600 and
// then renamed to path, so that no other user can connect to it at any
// moment. A stale socket at path is replaced; any other file is not.
func listenUnix(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("access: unix: needs a PATH, e.g. unix:/run/user/1000/mcpfsm.sock")
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("access: unix:%s: a file that is not a socket is there; remove it or choose another path", path)
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".mcpfsm-sock-")
	if err != nil {
		return nil, fmt.Errorf("access: unix:%s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("access: unix:%s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // it is renamed; path is removed on Close below
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("access: unix:%s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, fmt.Errorf("access: unix:%s: %w", path, err)
	}
	return &unixListener{Listener: ln, path: path}, nil
}

// unixListener removes its socket file when closed.
type unixListener struct {
	net.Listener
	path string
}

// Addr is the socket's path.
func (u *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: u.path, Net: "unix"} }

func (u *unixListener) Close() error {
	err := u.Listener.Close()
	if rerr := os.Remove(u.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
