// Command fsmdot draws the connection machine of package conn (conn.Table)
// as a Graphviz DOT graph, a Mermaid state diagram or an SVG image, and
// keeps the committed diagrams in diagrams/ in step with the table.
//
// Run it with -h for the flags and examples.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/fsm"
	"github.com/mcpfsm/mcpfsm/fsm/trace"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // stale diagrams, I/O errors, graphviz failures
	exitUsage = 2 // bad flags or arguments
)

// The files of the connection machine that -write produces and -check
// compares, in DIR; each machine of conn.Machines() has the same three,
// named after it.
const (
	dotFile     = "connection.dot"
	mermaidFile = "connection.mmd"
	svgFile     = "connection.svg"
)

// installHint tells the user how to get Graphviz, which only SVG needs.
const installHint = "install Graphviz: apt-get install graphviz (Debian/Ubuntu) or brew install graphviz (macOS)"

// errNoDot reports that Graphviz's dot is not on PATH.
var errNoDot = errors.New("graphviz 'dot' not found on PATH")

const usageText = `fsmdot draws the mcpfsm connection state machine (conn.Table) as a diagram.

Usage:
  fsmdot [-format dot|mermaid|svg] [-highlight STATE] [-o FILE]
  fsmdot -trace FILE [-server NAME] [-format dot|mermaid|svg] [-o FILE]
  fsmdot -write DIR
  fsmdot -check DIR

Without -write or -check, fsmdot prints one diagram to standard output
(or to FILE with -o). The output depends only on the table, so it is
byte-for-byte reproducible.

Formats:
  dot      Graphviz source (default)
  mermaid  Mermaid stateDiagram-v2, renders on GitHub inside a mermaid block
  svg      the DOT rendered by Graphviz 'dot -Tsvg'; needs Graphviz on PATH
           (apt-get install graphviz, or brew install graphviz)

-trace FILE draws the path one server took through the machine, from a
trace of its transitions (JSON lines: {"machine":..., "from":..., "event":...,
"when":..., "to":...}, the machine named by its server; mcpfsm -trace
writes them): each edge taken is labelled with its count ("connected ×3")
and, in dot and svg, drawn bold and blue; the state the server ended in
is highlighted. The trace is checked against the table
first: a step the table does not allow is named and nothing is drawn.
-server NAME picks the server; it may be left out when the trace has one.

-write DIR writes DIR/connection.dot, DIR/connection.mmd and, when Graphviz
is installed, DIR/connection.svg (otherwise it says so and skips the svg),
and the same three files of conn's inner machines (conn.Machines): the
tool-sync machine, named tool-sync.*, and the generation machine, named
generation.*. 'go generate ./conn' runs it on diagrams/.

-check DIR exits 1, naming each file, when one of the .dot or .mmd files
is missing or differs from fresh output. It does not need Graphviz and
does not check the svgs.

fsmdot draws conn's machines alone: a Go program cannot load another
package's fsm.Spec at run time (the table is typed Go, not a file), so
fsmdot is compiled with conn. To draw a machine of your own package,
call its Spec's DOT or Mermaid method (package fsm) from a test or a
go:generate program in that package, as this command does for conn.

Exit status: 0 on success, 1 on stale diagrams or a failure, 2 on bad usage.

Examples:
  go run ./cmd/fsmdot                              # DOT to stdout
  go run ./cmd/fsmdot -format mermaid              # Mermaid to stdout
  go run ./cmd/fsmdot -highlight lost-reconnecting | dot -Tpng -o lost.png
  go run ./cmd/fsmdot -format svg -o connection.svg
  go run ./cmd/fsmdot -trace run.jsonl -server git # the path git took
  go run ./cmd/fsmdot -write diagrams              # regenerate diagrams/
  go run ./cmd/fsmdot -check diagrams              # CI: are they current?

Flags:
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the whole command, with its arguments and output streams passed
// in so tests can drive it; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fsmdot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "dot", "output `FORMAT`: dot, mermaid or svg")
	out := fs.String("o", "", "write the diagram to `FILE` instead of standard output")
	highlight := fs.String("highlight", "", "draw `STATE` highlighted (bold, blue), e.g. established")
	check := fs.String("check", "", "exit 1 if `DIR`/connection.dot or DIR/connection.mmd is missing or stale")
	write := fs.String("write", "", "write connection.dot, connection.mmd and (with Graphviz) connection.svg to `DIR`")
	traceFile := fs.String("trace", "", "draw the path taken in the trace `FILE` (JSON lines of transitions), with a count per edge")
	server := fs.String("server", "", "the server of -trace whose path is drawn, `NAME` as in the trace")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage // flag has already printed the error and the usage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fsmdot: "+format+"\n", a...)
		fmt.Fprintln(stderr, "run 'fsmdot -h' for usage")
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["check"] && set["write"] {
		return usageErr("-check and -write cannot be combined")
	}
	if set["check"] || set["write"] {
		for _, name := range []string{"format", "o", "highlight", "trace", "server"} {
			if set[name] {
				return usageErr("-%s cannot be combined with -check or -write, which handle the plain dot and mermaid diagrams", name)
			}
		}
	}

	spec := conn.Table()
	switch {
	case set["check"]:
		if *check == "" {
			return usageErr("-check needs a directory")
		}
		stale := checkDir(*check)
		for _, msg := range stale {
			fmt.Fprintln(stderr, "fsmdot: "+msg)
		}
		if len(stale) > 0 {
			fmt.Fprintf(stderr, "fsmdot: regenerate with: go generate ./conn (or go run ./cmd/fsmdot -write %s)\n", *check)
			return exitFail
		}
		return exitOK
	case set["write"]:
		if *write == "" {
			return usageErr("-write needs a directory")
		}
		if err := writeDir(*write, stderr); err != nil {
			fmt.Fprintln(stderr, "fsmdot:", err)
			return exitFail
		}
		return exitOK
	}

	if set["server"] && !set["trace"] {
		return usageErr("-server needs -trace")
	}
	var overlay fsm.Overlay[conn.State]
	if set["trace"] {
		o, code := traceOverlay(spec, *traceFile, *server, set["server"], stderr, usageErr)
		if code != exitOK {
			return code
		}
		overlay = o
	}
	if set["highlight"] {
		st := conn.State(*highlight)
		if _, ok := spec.State(st); !ok {
			return usageErr("-highlight: unknown state %q; valid states: %s", *highlight, strings.Join(stateNames(), ", "))
		}
		overlay.Highlight = append(overlay.Highlight, st)
	}

	var body []byte
	switch *format {
	case "dot":
		body = []byte(spec.DOTOverlay(overlay))
	case "mermaid":
		body = []byte(spec.MermaidOverlay(overlay))
	case "svg":
		svg, err := renderSVG(spec.DOTOverlay(overlay))
		if err != nil {
			fmt.Fprintln(stderr, "fsmdot:", err)
			if errors.Is(err, errNoDot) {
				fmt.Fprintln(stderr, "fsmdot: "+installHint+", or use -format dot or -format mermaid")
			}
			return exitFail
		}
		body = svg
	default:
		return usageErr("unknown -format %q; valid formats: dot, mermaid, svg", *format)
	}

	if *out == "" {
		if _, err := stdout.Write(body); err != nil {
			fmt.Fprintln(stderr, "fsmdot:", err)
			return exitFail
		}
		return exitOK
	}
	if err := os.WriteFile(*out, body, 0o644); err != nil {
		fmt.Fprintln(stderr, "fsmdot:", err)
		return exitFail
	}
	return exitOK
}

// traceOverlay reads and checks the trace in path, picks the server's
// steps and returns what the diagram shows of them, or the exit status
// of a failure it has reported.
func traceOverlay(spec fsm.Spec[conn.State, conn.Event, conn.Payload], path, server string, serverSet bool, stderr io.Writer, usageErr func(string, ...any) int) (fsm.Overlay[conn.State], int) {
	var none fsm.Overlay[conn.State]
	if path == "" {
		return none, usageErr("-trace needs a file")
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(stderr, "fsmdot:", err)
		return none, exitFail
	}
	defer f.Close()
	steps, err := trace.Read(f)
	if err == nil {
		err = trace.Check(spec, steps)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fsmdot: %s: %v; the trace does not follow conn.Table(), so it is not drawn\n", path, err)
		return none, exitFail
	}
	servers := trace.Machines(steps)
	switch {
	case len(steps) == 0:
		fmt.Fprintf(stderr, "fsmdot: %s: the trace has no steps\n", path)
		return none, exitFail
	case !serverSet && len(servers) > 1:
		return none, usageErr("-trace %s has the steps of several servers (%s); pick one with -server", path, strings.Join(servers, ", "))
	case !serverSet:
		server = servers[0]
	case !slices.Contains(servers, server):
		return none, usageErr("-server %q: the trace %s has no steps of it; its servers: %s", server, path, strings.Join(servers, ", "))
	}
	return trace.Overlay(spec, trace.ForMachine(steps, server)), exitOK
}

// stateNames lists the declared states, in declaration order.
func stateNames() []string {
	var names []string
	for _, st := range conn.Table().States {
		names = append(names, string(st.Name))
	}
	return names
}

// textDiagrams returns the file names and contents that -write produces
// and -check compares; they need no external tool.
func textDiagrams() []struct{ name, body string } {
	var out []struct{ name, body string }
	for _, m := range conn.Machines() {
		out = append(out, struct{ name, body string }{m.Name + ".dot", m.DOT}, struct{ name, body string }{m.Name + ".mmd", m.Mermaid})
	}
	return out
}

// checkDir returns one message per missing or stale diagram in dir.
func checkDir(dir string) []string {
	var stale []string
	for _, d := range textDiagrams() {
		path := filepath.Join(dir, d.name)
		got, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			stale = append(stale, path+" is missing")
		case err != nil:
			stale = append(stale, fmt.Sprintf("%s cannot be read: %v", path, err))
		case string(got) != d.body:
			stale = append(stale, path+" is stale: it differs from conn.Machines()")
		}
	}
	return stale
}

// writeDir writes every diagram to dir. Without Graphviz it writes the
// text diagrams, says on stderr that it skipped the svg, and succeeds:
// only the svg needs Graphviz.
func writeDir(dir string, stderr io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range textDiagrams() {
		if err := writeIfChanged(filepath.Join(dir, d.name), []byte(d.body)); err != nil {
			return err
		}
	}
	for _, m := range conn.Machines() {
		path := filepath.Join(dir, m.Name+".svg")
		svg, err := renderSVG(m.DOT)
		if errors.Is(err, errNoDot) {
			fmt.Fprintf(stderr, "fsmdot: skipped %s: %v; %s\n", path, err, installHint)
			continue
		}
		if err != nil {
			return err
		}
		if err := writeIfChanged(path, svg); err != nil {
			return err
		}
	}
	return nil
}

// writeIfChanged writes body to path unless the file already holds it, so
// regenerating unchanged diagrams touches nothing.
func writeIfChanged(path string, body []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, body) {
		return nil
	}
	return os.WriteFile(path, body, 0o644)
}

// renderSVG pipes dot source through Graphviz. It returns an error
// matching errNoDot when dot is not on PATH.
func renderSVG(src string) ([]byte, error) {
	path, err := exec.LookPath("dot")
	if err != nil {
		return nil, fmt.Errorf("cannot render svg: %w", errNoDot)
	}
	cmd := exec.Command(path, "-Tsvg")
	cmd.Stdin = strings.NewReader(src)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("dot -Tsvg: %v: %s", err, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}
