package console

import (
	"os"
	"testing"

	"github.com/mcpfsm/mcpfsm/conn"
)

func TestDumpDiagram(t *testing.T) {
	os.WriteFile("/tmp/cons/d.html", []byte("<html><body style='margin:0;background:#fff'>"+Diagram(conn.Table())+"<script>document.querySelector('[data-state=established]').classList.add('current');document.querySelector('[data-from=connecting][data-to=established]').classList.add('last')</script></body></html>"), 0o644)
}
