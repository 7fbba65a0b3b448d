package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpfsm/mcpfsm/policy"
)

func TestSchedule(t *testing.T) {
	p := policy.Default()
	if got, want := Schedule(p), "10 attempts, 500ms..30s, gives up after 2m31.5s"; got != want {
		t.Errorf("Schedule(Default) = %q, want %q", got, want)
	}
	p.ProbeInterval = 5 * time.Minute
	if got, want := Schedule(p), "10 attempts, 500ms..30s, gives up after 2m31.5s, then probes every 5m0s"; got != want {
		t.Errorf("Schedule(probing) = %q, want %q", got, want)
	}
	p.ProbeInterval = 0
	p.MaxAttempts = 1
	if got, want := Schedule(p), "1 attempt, 500ms..30s, gives up after 500ms"; got != want {
		t.Errorf("Schedule = %q, want %q", got, want)
	}
	p.MaxAttempts, p.MaxDelay = policy.AttemptsLimit, policy.DelayLimit
	if got, want := Schedule(p), "about 146235603 years"; !strings.HasSuffix(got, want) {
		t.Errorf("Schedule = %q, want suffix %q", got, want)
	}
	p.Enabled = false
	if got := Schedule(p); !strings.HasPrefix(got, "disabled") {
		t.Errorf("Schedule(disabled) = %q", got)
	}
}
