package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
	"github.com/mcpfsm/mcpfsm/metrics"
)

// A host that supervises its servers with metrics and serves them to
// Prometheus at /metrics. Supervisors started with m.Start are reported
// until they are disposed, so a host that reloads its configuration just
// closes the old supervisors and starts the new ones.
func Example() {
	ctx := context.Background()
	mp, handler, err := metrics.Prometheus()
	if err != nil {
		log.Fatal(err)
	}
	defer mp.Shutdown(ctx)
	m, err := metrics.New(mp)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)

	srv := conntest.NewServer() // stands in for conn.Command(...) or conn.Streamable(...)
	srv.AddEchoTool("echo")
	defer srv.Close()
	reg := conn.NewRegistry()
	sup, err := m.Start(ctx, conn.Config{
		Name: "everything", Transport: srv.Transport(), Registry: reg,
		FailOnStartupError: true, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sup.Close(ctx)
	if _, err := reg.Call(ctx, "mcp__everything__echo", nil); err != nil {
		log.Fatal(err)
	}

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	printSeries(rec.Result().Body, `mcpfsm_connection_state{`, `mcpfsm_connection_tools{`,
		`mcp_client_operation_duration_seconds_count{`)
	// Output:
	// mcp_client_operation_duration_seconds_count{gen_ai_operation_name="execute_tool",gen_ai_tool_name="echo",mcp_method_name="tools/call",mcpfsm_call_outcome="ok",mcpfsm_server_name="everything"} 1
	// mcpfsm_connection_state{mcpfsm_server_name="everything",mcpfsm_state="established"} 1
	// mcpfsm_connection_tools{mcpfsm_server_name="everything"} 1
}

// printSeries prints the lines of a scrape that start with one of the
// prefixes and have a non-zero value.
func printSeries(r io.Reader, prefixes ...string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) && !strings.HasSuffix(line, " 0") {
				fmt.Println(line)
			}
		}
	}
}
