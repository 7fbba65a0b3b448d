// Command testserver is a fixture MCP server for the end-to-end tests of
// mcpfsm. Its flags choose the fault it plays; see the flag help. It is a
// test fixture, not a product: keep every mode small.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type options struct {
	exitAtStart   bool
	exitAfter     time.Duration
	noInit        bool
	ignoreEOF     bool
	ignoreSIGTERM bool
	grandchild    bool
	pidfile       string
	stderrFlood   bool
	storm         int
	garbage       bool
	duplicate     bool
	tools         int
	badNames      bool
	pidlog        string
	crashDelay    time.Duration
	flapEvery     time.Duration
	rawProtocol   string
	hangAfter     int
	session       bool
	hangNoRead    bool
	closeStdout   int
	exitAnswers   int
	setsidHolder  string
	sleep         time.Duration
	http          bool
	stateless     bool
	refuseInit    bool
	ignoreSignals bool
	envFile       string
	lastWords     string
	recordMeta    bool
	probes        bool
	probe         string
}

func main() {
	var o options
	flag.BoolVar(&o.exitAtStart, "exit-at-start", false, "exit with status 1 right after start")
	flag.DurationVar(&o.exitAfter, "exit-after", 0, "exit with status 3 this long after start")
	flag.BoolVar(&o.noInit, "no-init", false, "never answer initialize: read stdin and discard it")
	flag.BoolVar(&o.ignoreEOF, "ignore-eof", false, "keep running after stdin EOF")
	flag.BoolVar(&o.ignoreSIGTERM, "ignore-sigterm", false, "ignore SIGTERM")
	flag.BoolVar(&o.grandchild, "grandchild", false, "start a 'sleep 1000' child that outlives this process unless its group is killed")
	flag.StringVar(&o.pidfile, "pidfile", "", "with -grandchild: write the grandchild's PID to this file")
	flag.BoolVar(&o.stderrFlood, "stderr-flood", false, "write to stderr continuously")
	flag.IntVar(&o.storm, "list-changed-storm", 0, "after initialization, change the tool list this many times, then add tool storm_done")
	flag.BoolVar(&o.garbage, "garbage", false, "write non-JSON lines to stdout instead of answering")
	flag.BoolVar(&o.duplicate, "duplicate-tools", false, "raw JSON-RPC server whose tools/list names one tool twice")
	flag.StringVar(&o.rawProtocol, "raw-protocol", "", "raw JSON-RPC server (tool echo) that answers initialize with this protocol version")
	flag.IntVar(&o.hangAfter, "hang-after", 0, "raw JSON-RPC server (tool echo) that answers nothing, pings included, after answering this many requests other than ping, but keeps reading stdin")
	flag.BoolVar(&o.hangNoRead, "hang-no-read", false, "with -hang-after: once hung, stop reading stdin too, so that the client's writes fill the pipe")
	flag.IntVar(&o.closeStdout, "close-stdout-after", 0, "raw JSON-RPC server (tool echo) that closes stdout after answering this many requests other than ping, and then blocks")
	flag.IntVar(&o.exitAnswers, "exit-after-answers", 0, "raw JSON-RPC server (tool echo) that exits with status 3 right after answering this many requests other than ping")
	flag.StringVar(&o.setsidHolder, "setsid-holder", "", "start a process in a session of its own (out of this process group) that holds stdout and stderr for a minute; append its PID to this file")
	flag.DurationVar(&o.sleep, "sleep", 0, "sleep this long and exit, doing nothing else (the -setsid-holder process)")
	flag.BoolVar(&o.http, "http", false, "serve Streamable HTTP on 127.0.0.1 (a free port) instead of stdio; print \"testserver: listening URL\" to stderr")
	flag.BoolVar(&o.stateless, "stateless", false, "with -http: serve statelessly, as go-sdk serves protocol 2026-07-28 over HTTP")
	flag.BoolVar(&o.refuseInit, "refuse-initialize", false, "answer the classic initialize handshake with a JSON-RPC error (-32022), as a server of protocol 2026-07-28 only, and keep serving server/discover")
	flag.BoolVar(&o.ignoreSignals, "ignore-signals", false, "ignore SIGINT, SIGTERM and SIGHUP")
	flag.StringVar(&o.envFile, "env-file", "", "write this process's environment to this file, one KEY=VALUE a line")
	flag.IntVar(&o.tools, "tools", 0, "list this many extra tools (extra_00000...), over pages of 500")
	flag.BoolVar(&o.badNames, "bad-names", false, "also list tools whose names are not valid public names")
	flag.StringVar(&o.pidlog, "pidlog", "", "append this process's PID to this file on start")
	flag.DurationVar(&o.flapEvery, "list-changed-every", 0, "add or remove the tool flap this often, for ever (keep it above the SDK's 10ms notification debounce, or no notification is ever sent)")
	flag.DurationVar(&o.crashDelay, "crash-delay", 20*time.Millisecond, "the crash tool exits this long after its reply is written; 0 exits right after the write")
	flag.StringVar(&o.lastWords, "last-words", "", "write this line to stderr right before the exit of -exit-at-start or -exit-after")
	flag.BoolVar(&o.recordMeta, "record-meta", false, "print \"testserver: meta JSON\" to stderr for every request received: its method, its params._meta and, over -http, its traceparent header")
	flag.BoolVar(&o.probes, "probes", false, "also serve the tools read, write, dial, fetch, alloc and child, which try what a sandbox may refuse")
	flag.StringVar(&o.probe, "probe", "", "run one probe (KIND:ARG, as the tools' names and argument), print its outcome and exit")
	flag.BoolVar(&o.session, "session", false, "also serve a resource, a template, a prompt, subscriptions and the tools ask (elicitation), roots and touch (resource updated)")
	flag.Parse()

	if o.sleep > 0 {
		time.Sleep(o.sleep)
		return
	}
	if o.probe != "" {
		os.Exit(runProbe(o.probe))
	}
	// As the init of a sandbox's PID namespace, its PID is 1 and no host
	// process's: the namespace's end kills what it started.
	if o.pidlog != "" && os.Getpid() != 1 {
		appendLine(o.pidlog, fmt.Sprint(os.Getpid()))
	}
	if o.envFile != "" {
		writeEnv(o.envFile)
	}
	// Tests watch stderr for this line to learn that a process started.
	fmt.Fprintf(os.Stderr, "testserver: started %d\n", os.Getpid())
	exit := func(code int) {
		if o.lastWords != "" {
			fmt.Fprintln(os.Stderr, o.lastWords)
		}
		os.Exit(code)
	}
	if o.exitAtStart {
		exit(1)
	}
	if o.exitAfter > 0 {
		time.AfterFunc(o.exitAfter, func() { exit(3) })
	}
	if o.ignoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	if o.ignoreSignals {
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	}
	if o.setsidHolder != "" {
		startHolder(o.setsidHolder)
	}
	if o.grandchild {
		startGrandchild(o.pidfile)
	}
	if o.stderrFlood {
		go flood()
	}

	var err error
	switch {
	case o.noInit:
		_, err = io.Copy(io.Discard, os.Stdin)
	case o.garbage:
		err = serveGarbage()
	case o.http:
		err = serveHTTP(o)
	case o.duplicate || o.rawProtocol != "" || o.hangAfter > 0 || o.closeStdout > 0 || o.exitAnswers > 0:
		err = serveRaw(o)
	default:
		err = serveSDK(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
	}
	if o.ignoreEOF {
		select {} // stdin is gone; stay until killed
	}
	if err != nil {
		os.Exit(2)
	}
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}
}

// writeEnv writes the environment to path, then renames, so a reader
// never sees a partial file.
func writeEnv(path string) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(os.Environ(), "\n")+"\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}
	if err := os.Rename(tmp, path); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}
}
