package conn_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/conn"
)

// The table tests read conn.Table() as data: each invariant the package
// documents is checked against the declaration the supervisor runs and the
// diagrams are drawn from, not against a copy of it.

func TestTableValidates(t *testing.T) {
	if err := conn.Table().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestTableStateNames pins the string values, which are public: they
// appear in logs, diagrams and Transition records.
func TestTableStateNames(t *testing.T) {
	want := map[conn.State]string{
		conn.Connecting:         "connecting",
		conn.Established:        "established",
		conn.FailedRetrying:     "failed-retrying",
		conn.LostReconnecting:   "lost-reconnecting",
		conn.Exhausted:          "exhausted",
		conn.FailedDisabled:     "failed-disabled",
		conn.LostDisabled:       "lost-disabled",
		conn.Halted:             "halted",
		conn.AuthRefused:        "auth-refused",
		conn.NeedsAuthorization: "needs-authorization",
		conn.FailedPermanent:    "failed-permanent",
		conn.Disposing:          "disposing",
		conn.Disposed:           "disposed",
	}
	got := map[conn.State]string{}
	for st := range want {
		got[st] = st.String()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state string values (-want +got):\n%s", diff)
	}

	// The machine is always in a leaf; the superstates only group them.
	var declared, constants []string
	for _, st := range conn.Table().Leaves() {
		declared = append(declared, string(st))
	}
	for _, name := range want {
		constants = append(constants, name)
	}
	slices.Sort(declared)
	slices.Sort(constants)
	if diff := cmp.Diff(constants, declared); diff != "" {
		t.Errorf("Table declares other states than the State constants (-constants +Table):\n%s", diff)
	}
	if got := conn.Table().Initial; got != conn.Connecting {
		t.Errorf("initial state = %q, want %q", got, conn.Connecting)
	}
}

// transitionsInto returns the sorted source states of every transition into
// to as the machine runs it (the flattened table: a superstate's
// transition once per state inside it), as "from --label-->" strings so a
// failure names the offending event and guard.
func transitionsInto(to conn.State) []string {
	var out []string
	for _, e := range conn.Table().Flatten() {
		if e.To == to {
			out = append(out, string(e.From)+" --"+e.Label()+"-->")
		}
	}
	slices.Sort(out)
	return out
}

// declaredInto is transitionsInto as declared, and drawn: a superstate's
// transition once, from the superstate.
func declaredInto(to conn.State) []string {
	var out []string
	for _, tr := range conn.Table().Transitions {
		if tr.To == to {
			for _, from := range tr.From {
				out = append(out, string(from)+" --"+tr.Label()+"-->")
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestTableSharedTransitionsOnce: dispose and the unguarded reconnect are
// declared once each, from a superstate, and the superstates hold what
// their names say.
func TestTableSharedTransitionsOnce(t *testing.T) {
	spec := conn.Table()
	count := map[conn.Event][]string{}
	for _, tr := range spec.Transitions {
		for _, from := range tr.From {
			count[tr.Event] = append(count[tr.Event], string(from)+" --"+tr.Label()+"-->")
		}
	}
	if diff := cmp.Diff([]string{"live --dispose-->"}, count[conn.EventDispose]); diff != "" {
		t.Errorf("dispose declarations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"waiting --reconnect-->", "halted --reconnect [process gone]-->"}, count[conn.EventReconnect]); diff != "" {
		t.Errorf("reconnect declarations (-want +got):\n%s", diff)
	}
	var inWaiting, outsideLive []conn.State
	for _, st := range spec.Leaves() {
		if spec.Contains("waiting", st) {
			inWaiting = append(inWaiting, st)
		}
		if !spec.Contains("live", st) {
			outsideLive = append(outsideLive, st)
		}
	}
	want := []conn.State{conn.AuthRefused, conn.Exhausted, conn.FailedDisabled, conn.FailedPermanent, conn.FailedRetrying, conn.LostDisabled, conn.LostReconnecting, conn.NeedsAuthorization}
	if diff := cmp.Diff(want, inWaiting); diff != "" {
		t.Errorf("states inside waiting (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]conn.State{conn.Disposed, conn.Disposing}, outsideLive); diff != "" {
		t.Errorf("states outside live (-want +got):\n%s", diff)
	}
}

// TestTableFailedVersusLost checks the distinction the package is built
// around: lost-* states follow an established connection, failed-* states
// an attempt that never got there.
func TestTableFailedVersusLost(t *testing.T) {
	tests := []struct {
		to   conn.State
		want []string
	}{
		{conn.LostReconnecting, []string{"established --connection-lost-->"}},
		{conn.LostDisabled, []string{"established --connection-lost [reconnect disabled]-->"}},
		{conn.FailedRetrying, []string{"connecting --attempt-failed-->"}},
		{conn.FailedDisabled, []string{"connecting --attempt-failed [reconnect disabled]-->"}},
		{conn.FailedPermanent, []string{"connecting --attempt-failed [no retry can fix it]-->"}},
		{conn.Exhausted, []string{"connecting --attempt-failed [budget spent]-->", "established --connection-lost [budget spent]-->"}},
		{conn.Halted, []string{"connecting --attempt-failed [not released]-->", "established --connection-lost [not released]-->"}},
		// A refused authorization is an attempt's outcome only: a session
		// that was up and loses its authorization is lost, and its next
		// attempt is refused.
		{conn.AuthRefused, []string{"connecting --attempt-failed [authorization refused]-->"}},
		// A server that needs a sign-in is one whether it never came up
		// or its credential expired and could not be refreshed.
		{conn.NeedsAuthorization, []string{"connecting --attempt-failed [sign-in required]-->", "established --connection-lost [sign-in required]-->"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, transitionsInto(tt.to)); diff != "" {
			t.Errorf("transitions into %s (-want +got):\n%s", tt.to, diff)
		}
	}

	spec := conn.Table()
	for _, st := range spec.States {
		var want []conn.State
		switch {
		case st.Name.Lost():
			want = []conn.State{conn.Established}
		case st.Name.Failed():
			want = []conn.State{conn.Connecting}
		default:
			continue
		}
		if diff := cmp.Diff(want, spec.Sources(st.Name)); diff != "" {
			t.Errorf("Sources(%s) (-want +got):\n%s", st.Name, diff)
		}
	}
}

func TestTableTerminal(t *testing.T) {
	spec := conn.Table()
	var terminal []conn.State
	for _, st := range spec.States {
		if st.Terminal != st.Name.Terminal() {
			t.Errorf("%s: Table says Terminal=%v, State.Terminal() says %v", st.Name, st.Terminal, st.Name.Terminal())
		}
		if st.Terminal {
			terminal = append(terminal, st.Name)
		}
	}
	if diff := cmp.Diff([]conn.State{conn.Disposed}, terminal); diff != "" {
		t.Errorf("terminal states (-want +got):\n%s", diff)
	}
	for _, tr := range spec.Transitions {
		for _, from := range tr.From {
			if from.Terminal() {
				t.Errorf("transition %s --%s--> %s leaves terminal state %s", from, tr.Event, tr.To, from)
			}
		}
	}
	for _, st := range terminal {
		if got := spec.Targets(st); len(got) != 0 {
			t.Errorf("Targets(%s) = %v, want none", st, got)
		}
	}
}

// TestTableDispose checks that Close can always make progress: dispose is
// permitted everywhere except where disposal already runs or is done.
func TestTableDispose(t *testing.T) {
	spec := conn.Table()
	var got, want []conn.State
	for _, st := range spec.States {
		if !st.Terminal && st.Name != conn.Disposing {
			want = append(want, st.Name)
		}
		if to, ok := spec.Targets(st.Name)[conn.EventDispose]; ok {
			got = append(got, st.Name)
			if !slices.Equal(to, []conn.State{conn.Disposing}) {
				t.Errorf("dispose from %s leads to %s, want %s", st.Name, to, conn.Disposing)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states where dispose is permitted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[conn.Event][]conn.State{conn.EventDisposed: {conn.Disposed}}, spec.Targets(conn.Disposing)); diff != "" {
		t.Errorf("events out of disposing (-want +got):\n%s", diff)
	}
}

func TestTablePhrases(t *testing.T) {
	const failedPrefix, lostPrefix = "connection failed", "connection lost"
	var failedPhrase, lostPhrase, failed, lost []conn.State
	for _, st := range conn.Table().States {
		if conn.Table().Superstate(st.Name) {
			continue // never current, never logged
		}
		s, phrase := st.Name, st.Name.Phrase()
		if phrase == "" {
			t.Errorf("%s has an empty Phrase", s)
		}
		if s.Failed() && s.Lost() {
			t.Errorf("%s is both Failed and Lost", s)
		}
		if strings.HasPrefix(phrase, failedPrefix) {
			failedPhrase = append(failedPhrase, s)
		}
		if strings.HasPrefix(phrase, lostPrefix) {
			lostPhrase = append(lostPhrase, s)
		}
		if s.Failed() {
			failed = append(failed, s)
		}
		if s.Lost() {
			lost = append(lost, s)
		}
	}
	if diff := cmp.Diff([]conn.State{conn.FailedRetrying, conn.FailedDisabled, conn.FailedPermanent}, failed); diff != "" {
		t.Errorf("Failed() states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]conn.State{conn.LostReconnecting, conn.LostDisabled}, lost); diff != "" {
		t.Errorf("Lost() states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(lost, lostPhrase); diff != "" {
		t.Errorf("states phrased %q (-Lost() +phrase):\n%s", lostPrefix, diff)
	}
	if diff := cmp.Diff(failed, failedPhrase); diff != "" {
		t.Errorf("states phrased %q (-Failed() +phrase):\n%s", failedPrefix, diff)
	}
}

// dotEdge matches an edge line of fsm.Spec.DOT, at any cluster depth:
// "from" -> "to" [label="ev [when]", ltail="cluster_from"];
var dotEdge = regexp.MustCompile(`^\t+"([^"]+)" -> "([^"]+)"(?: \[label="([^"]*)"(?:, [a-z]+="[^"]*")*\])?;$`)

// dotEdges parses the edges of the rendered DOT, skipping the start
// arrows (of the machine and of each superstate, which have no label),
// as "from --label-->" strings keyed by target.
func dotEdges(t *testing.T, dot string) map[string][]string {
	t.Helper()
	edges := map[string][]string{} // to -> "from --event-->"
	for line := range strings.Lines(dot) {
		m := dotEdge.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			if strings.Contains(line, "->") {
				t.Fatalf("cannot parse DOT edge line %q", line)
			}
			continue
		}
		from, to, label := m[1], m[2], m[3]
		if label == "" {
			continue // an initial pseudo-state's arrow
		}
		for _, ev := range strings.Split(label, `\n`) {
			edges[to] = append(edges[to], from+" --"+ev+"-->")
		}
	}
	for to := range edges {
		slices.Sort(edges[to])
	}
	return edges
}

// TestTableDiagramEdges reads the failed/lost invariant off the drawing,
// so the diagram cannot show a different machine from the one that runs.
func TestTableDiagramEdges(t *testing.T) {
	edges := dotEdges(t, conn.Table().DOT())

	for _, st := range conn.Table().States {
		if diff := cmp.Diff(declaredInto(st.Name), edges[string(st.Name)]); diff != "" {
			t.Errorf("DOT edges into %s differ from the table (-table +DOT):\n%s", st.Name, diff)
		}
	}
	for to, from := range map[conn.State]string{
		conn.LostReconnecting: string(conn.Established),
		conn.FailedRetrying:   string(conn.Connecting),
	} {
		in := edges[string(to)]
		if len(in) == 0 {
			t.Errorf("DOT has no edge into %s", to)
		}
		for _, e := range in {
			if !strings.HasPrefix(e, from+" --") {
				t.Errorf("DOT edge %s %s starts outside %s", e, to, from)
			}
		}
	}
}

// TestTableWaysBack pins every way back into connecting: the backoff
// timer, a probe from exhausted, and Reconnect from every state that waits
// or has stopped (from halted only once its process is gone), and nothing
// from established, connecting itself or disposal.
func TestTableWaysBack(t *testing.T) {
	want := []string{
		"auth-refused --reconnect-->",
		"exhausted --probe-->",
		"exhausted --reconnect-->",
		"failed-disabled --reconnect-->",
		"failed-permanent --reconnect-->",
		"failed-retrying --backoff-elapsed-->",
		"failed-retrying --reconnect-->",
		"halted --reconnect [process gone]-->",
		"lost-disabled --reconnect-->",
		"lost-reconnecting --backoff-elapsed-->",
		"lost-reconnecting --reconnect-->",
		"needs-authorization --authorized-->",
		"needs-authorization --reconnect-->",
	}
	if diff := cmp.Diff(want, transitionsInto(conn.Connecting)); diff != "" {
		t.Errorf("transitions into connecting (-want +got):\n%s", diff)
	}
}
