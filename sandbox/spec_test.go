package sandbox_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfsm/mcpfsm/sandbox"
)

func TestAllows(t *testing.T) {
	s := sandbox.Spec{AllowedDomains: []string{"example.com", "*.github.com", "127.0.0.1", "::1"}, DeniedDomains: []string{"evil.github.com"}}
	for host, want := range map[string]bool{
		"example.com": true, "EXAMPLE.com.": true, "www.example.com": false,
		"api.github.com": true, "a.b.github.com": true, "github.com": false, "evil.github.com": false, "notgithub.com": false,
		"127.0.0.1": true, "127.0.0.2": false, "[::1]": true, "localhost": false,
		// A denied domain covers its subdomains (issue 46).
		"x.evil.github.com": false, "a.b.evil.github.com": false, "notevil.github.com": true,
	} {
		if got, reason := s.Allows(host); got != want {
			t.Errorf("Allows(%q) = %v (%s), want %v", host, got, reason, want)
		}
	}
	if _, reason := s.Allows("evil.github.com"); !strings.Contains(reason, "deniedDomains") {
		t.Errorf("the reason of a denied domain: %q", reason)
	}
}

func TestValidate(t *testing.T) {
	bad := sandbox.Spec{AllowRead: []string{"rel"}, DenyWrite: []string{""}, AllowedDomains: []string{"*", "https://x.com", "a.*.com", "x.com:443", "a..b"},
		MemoryMB: -1}
	err := bad.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad Spec")
	}
	for _, want := range []string{"AllowRead[0]", "DenyWrite[0]", "AllowedDomains[0]", "AllowedDomains[1]", "AllowedDomains[2]", "AllowedDomains[3]", "AllowedDomains[4]", "MemoryMB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not name %s:\n%v", want, err)
		}
	}
	good := sandbox.Spec{AllowRead: []string{}, DenyRead: []string{"/root/.ssh"}, AllowedDomains: []string{"*.example.com", "10.0.0.1", "::1"}, MaxFiles: 10}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate(%+v): %v", good, err)
	}
}

func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		spec sandbox.Spec
		want []string
	}{
		{sandbox.Spec{}, []string{"read: everything", "write: nowhere", "network: none; no Unix sockets"}},
		{sandbox.Spec{AllowRead: []string{"/a"}, DenyRead: []string{"/a/k"}, AllowWrite: []string{"/w"}, DenyWrite: []string{"/w/.git"},
			AllowedDomains: []string{"x.com"}, DeniedDomains: []string{"y.x.com"}, AllowAllUnixSockets: true, MemoryMB: 256, MaxFiles: 64},
			[]string{"read: only /a, and what running needs; not /a/k", "write: /w; not /w/.git",
				"network: x.com through mcpfsm's proxy; not y.x.com", "limits: memoryMB 256 (BOUND), maxFiles 64"}},
	} {
		got := c.spec.Describe()
		// What memoryMB bounds depends on the cgroups the system gives
		// (TestAttackSharedMemory): one of two forms.
		for i, l := range got {
			rest, ok := strings.CutPrefix(l, "limits: memoryMB 256 (")
			bound, tail, ok2 := strings.Cut(rest, "), maxFiles 64")
			if ok && ok2 && tail == "" && (bound == "a memory cgroup: shared memory and memfd count" ||
				strings.HasPrefix(bound, "private memory only: shared memory and memfd are not bounded")) {
				got[i] = "limits: memoryMB 256 (BOUND), maxFiles 64"
			}
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("Describe(%+v) (-want +got):\n%s", c.spec, diff)
		}
	}
}
