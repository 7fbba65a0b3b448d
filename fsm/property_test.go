package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/mcpfsm/mcpfsm/fsm"
)

// key is one (state, event) cell of the reference table.
type key struct{ state, event string }

// alt is a guarded alternative of a cell: taken when the event's data is
// at least min.
type alt struct {
	min int
	to  string
}

func (a alt) when() string { return fmt.Sprintf("data >= %d", a.min) }

// genSpec draws a valid spec by construction: a chain s0 -> s1 -> ... makes
// every state reachable, extra random edges (self-loops included) fill the
// table, only used events are declared, and only states without outgoing
// edges may be terminal; some cells get a guarded alternative, declared
// before the cell's unguarded transition. It returns the spec, its
// reference table and the guarded alternatives.
func genSpec(t *rapid.T) (fsm.Spec[string, string, int], map[key]string, map[key]alt) {
	nStates := rapid.IntRange(1, 6).Draw(t, "states")
	nEvents := rapid.IntRange(1, 4).Draw(t, "events")
	state := func(i int) string { return fmt.Sprintf("s-%d", i) } // '-' exercises Mermaid ids
	event := func(i int) string { return fmt.Sprintf("e%d", i) }

	table := make(map[key]string)
	for i := 1; i < nStates; i++ {
		ev := rapid.IntRange(0, nEvents-1).Draw(t, "chain event")
		table[key{state(i - 1), event(ev)}] = state(i)
	}
	for i := range nStates {
		for j := range nEvents {
			k := key{state(i), event(j)}
			if _, ok := table[k]; !ok && rapid.IntRange(0, 2).Draw(t, "extra edge?") == 0 {
				table[k] = state(rapid.IntRange(0, nStates-1).Draw(t, "extra target"))
			}
		}
	}

	alts := make(map[key]alt)
	spec := fsm.Spec[string, string, int]{Name: "random", Initial: state(0)}
	for i := range nStates {
		for j := range nEvents {
			k := key{state(i), event(j)}
			if _, ok := table[k]; ok && rapid.IntRange(0, 2).Draw(t, "guarded alternative?") == 0 {
				a := alt{min: rapid.IntRange(1, 3).Draw(t, "guard min"), to: state(rapid.IntRange(0, nStates-1).Draw(t, "guarded target"))}
				alts[k] = a
				spec.Transitions = append(spec.Transitions, fsm.Transition[string, string, int]{
					Event: k.event, From: []string{k.state}, To: a.to,
					Guard: func(d int) bool { return d >= a.min }, When: a.when(),
				})
			}
		}
	}
	hasOut := map[string]bool{}
	grouped := map[[2]string][]string{} // (event, to) -> from, so From lists have several entries
	used := map[string]bool{}
	for k, to := range table {
		hasOut[k.state] = true
		used[k.event] = true
		grouped[[2]string{k.event, to}] = append(grouped[[2]string{k.event, to}], k.state)
	}
	for i := range nStates {
		s := state(i)
		spec.States = append(spec.States, fsm.State[string]{
			Name:     s,
			Doc:      "state " + s,
			Terminal: !hasOut[s] && rapid.Bool().Draw(t, "terminal"),
			Alarm:    rapid.Bool().Draw(t, "failure"),
		})
	}
	for j := range nEvents {
		if used[event(j)] {
			spec.Events = append(spec.Events, fsm.Event[string]{Name: event(j)})
		}
	}
	groups := make([][2]string, 0, len(grouped))
	for g := range grouped {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, g := range groups {
		from := grouped[g]
		slices.Sort(from)
		spec.Transitions = append(spec.Transitions, fsm.Transition[string, string, int]{Event: g[0], From: from, To: g[1]})
	}
	return spec, table, alts
}

// model is the reference implementation: a map lookup per event and a FIFO
// queue for events fired from callbacks.
type model struct {
	table  map[key]string
	alts   map[key]alt
	cur    string
	react  map[string][]string // events fired by OnEnter of a state
	budget int                 // bounds re-entrant fires so reaction cycles end
}

type pend struct {
	ev   string
	data int
	own  bool
}

// fire returns the expected steps, the events expected at OnError, and
// whether the caller's own event fails.
func (md *model) fire(ev string, data int) (steps []fsm.Step[string, string, int], errEvents []string, ownErr bool) {
	queue := []pend{{ev, data, true}}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		to, ok := md.table[key{md.cur, p.ev}]
		if !ok {
			if p.own {
				ownErr = true
			} else {
				errEvents = append(errEvents, p.ev)
			}
			continue
		}
		when := ""
		if a, ok := md.alts[key{md.cur, p.ev}]; ok && p.data >= a.min {
			to, when = a.to, a.when()
		}
		steps = append(steps, fsm.Step[string, string, int]{From: md.cur, To: to, Event: p.ev, When: when, Data: p.data})
		md.cur = to
		for _, r := range md.react[to] {
			if md.budget > 0 {
				md.budget--
				queue = append(queue, pend{r, 0, false})
			}
		}
	}
	return steps, errEvents, ownErr
}

func (md *model) available() []string {
	var out []string
	for k := range md.table {
		if k.state == md.cur {
			out = append(out, k.event)
		}
	}
	slices.Sort(out)
	return out
}

// TestPropertyMatchesModel checks random valid specs under random event
// sequences, with callbacks firing re-entrantly, against the model: same
// steps in the same order, same errors, same state, never a panic or a
// deadlock.
func TestPropertyMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec, table, alts := genSpec(t)
		if err := spec.Validate(); err != nil {
			t.Fatalf("generated spec is invalid: %v\n%s", err, spec.DOT())
		}
		// Events to fire: declared ones plus one that is not declared.
		names := []string{"undeclared"}
		for _, e := range spec.Events {
			names = append(names, e.Name)
		}
		md := &model{table: table, alts: alts, cur: spec.Initial, react: map[string][]string{},
			budget: rapid.IntRange(0, 20).Draw(t, "budget")}
		for _, s := range spec.States {
			md.react[s.Name] = rapid.SliceOfN(rapid.SampledFrom(names), 0, 2).Draw(t, "reactions "+s.Name)
		}

		var (
			m         *fsm.Machine[string, string, int]
			budget    = md.budget
			steps     []fsm.Step[string, string, int]
			errEvents []string
		)
		opts := fsm.Options[string, string, int]{
			OnEnter:  map[string]func(context.Context, fsm.Step[string, string, int]){},
			Observer: func(st fsm.Step[string, string, int]) { steps = append(steps, st) },
			OnError: func(ev string, err error) {
				if !errors.Is(err, fsm.ErrInvalidEvent) {
					t.Errorf("OnError(%s) got %v, want ErrInvalidEvent", ev, err)
				}
				errEvents = append(errEvents, ev)
			},
		}
		for _, s := range spec.States {
			opts.OnEnter[s.Name] = func(ctx context.Context, _ fsm.Step[string, string, int]) {
				m.Rest() // a no-op while an event runs
				for _, r := range md.react[s.Name] {
					if budget > 0 {
						budget--
						if err := m.Fire(ctx, r); err != nil {
							t.Fatalf("re-entrant Fire(%s) = %v, want nil", r, err)
						}
					}
				}
			}
		}
		m, err := fsm.New(spec, opts)
		if err != nil {
			t.Fatalf("New: %v", err)
		}

		evs := rapid.SliceOfN(rapid.SampledFrom(names), 0, 30).Draw(t, "fired")
		for i, ev := range evs {
			data := rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("data %d", i))
			steps, errEvents = nil, nil
			wantSteps, wantErrEvents, wantOwnErr := md.fire(ev, data)
			if rapid.Bool().Draw(t, fmt.Sprintf("rest %d", i)) {
				m.Rest()
			}
			err := m.FireWith(context.Background(), ev, data)
			if wantOwnErr != (err != nil) {
				t.Fatalf("Fire(%s) = %v, model says failure=%v", ev, err, wantOwnErr)
			}
			if err != nil && !errors.Is(err, fsm.ErrInvalidEvent) {
				t.Fatalf("Fire(%s) = %v, want ErrInvalidEvent", ev, err)
			}
			if !slices.Equal(steps, wantSteps) {
				t.Fatalf("Fire(%s) steps %v, model %v", ev, steps, wantSteps)
			}
			if !slices.Equal(errEvents, wantErrEvents) {
				t.Fatalf("Fire(%s) OnError events %v, model %v", ev, errEvents, wantErrEvents)
			}
			if m.State() != md.cur {
				t.Fatalf("State() = %s, model %s", m.State(), md.cur)
			}
			if got, want := m.Available(), md.available(); !slices.Equal(got, want) {
				t.Fatalf("Available() = %v, model %v", got, want)
			}
			for _, n := range names {
				if _, want := table[key{md.cur, n}]; m.Can(n) != want {
					t.Fatalf("Can(%s) in %s = %v, want %v", n, md.cur, !want, want)
				}
			}
		}
		// The Machine's copy of the spec renders the same bytes, whatever state it is in.
		if spec.DOT() != m.Spec().DOT() || spec.Mermaid(spec.Initial) != m.Spec().Mermaid(spec.Initial) {
			t.Fatal("diagrams are not deterministic")
		}
	})
}

// TestPropertyValidateNeverPanics feeds Validate arbitrary small tables
// (empty names, duplicates, dangling references) and checks that it never
// panics, that every rejection is a *SpecError, and that whatever it accepts
// New accepts and can render.
func TestPropertyValidateNeverPanics(t *testing.T) {
	names := []string{"", "a", "b", "c"}
	name := rapid.SampledFrom(names)
	rapid.Check(t, func(t *rapid.T) {
		spec := fsm.Spec[string, string, int]{
			Name:    rapid.SampledFrom([]string{"", "x"}).Draw(t, "name"),
			Initial: name.Draw(t, "initial"),
		}
		for _, n := range rapid.SliceOfN(name, 0, 4).Draw(t, "states") {
			spec.States = append(spec.States, fsm.State[string]{Name: n, Terminal: rapid.Bool().Draw(t, "terminal")})
		}
		for _, n := range rapid.SliceOfN(name, 0, 3).Draw(t, "events") {
			spec.Events = append(spec.Events, fsm.Event[string]{Name: n})
		}
		for range rapid.IntRange(0, 5).Draw(t, "transitions") {
			spec.Transitions = append(spec.Transitions, fsm.Transition[string, string, int]{
				Event: name.Draw(t, "event"), From: rapid.SliceOfN(name, 0, 2).Draw(t, "from"), To: name.Draw(t, "to"),
			})
		}
		err := spec.Validate()
		_, _ = spec.DOT("a"), spec.Mermaid("a") // must not panic even for invalid specs
		if err != nil {
			var se *fsm.SpecError
			if !errors.As(err, &se) || !errors.Is(err, fsm.ErrInvalidSpec) {
				t.Fatalf("Validate error %v is not a *SpecError", err)
			}
			return
		}
		m, err := fsm.New(spec, fsm.Options[string, string, int]{})
		if err != nil {
			t.Fatalf("New rejected a valid spec: %v", err)
		}
		for _, e := range spec.Events {
			_ = m.Fire(context.Background(), e.Name)
		}
	})
}
