package console

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/mcpfsm/mcpfsm/conn"
	"github.com/mcpfsm/mcpfsm/conntest"
)

// envRequireBrowser, when set (as .ci/run does), makes a missing Chromium
// a failure instead of a skip.
const envRequireBrowser = "MCPFSM_REQUIRE_BROWSER"

// envArtifacts names a directory for the browser test's screenshots.
const envArtifacts = "MCPFSM_ARTIFACTS"

// chromium finds a Chromium or Chrome binary, or skips the test (fails it
// under CI).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(envRequireBrowser) != "" || os.Getenv("CI") != "" {
		t.Fatalf("no chromium on PATH, and %s or CI is set: install it (apt-get install chromium) or set CHROME", envRequireBrowser)
	}
	t.Skip("no chromium on PATH (apt-get install chromium, or set CHROME); the browser test needs it")
	return ""
}

// TestBrowser drives the status page in headless Chromium against real
// supervisors on a mock clock: the page shows every server's state, a
// crash turns a card to lost-reconnecting and back without a reload, and
// the Reconnect button brings an exhausted server back.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	if testing.Short() {
		t.Skip("the browser test is slow; skipped with -short")
	}
	h := newTestHost(t, Options{})
	alpha := h.add("alpha", 3)
	beta := h.add("beta", 3, conntest.Refuse)
	gamma := h.add("gamma", 2)
	delta := h.add("delta", 3)
	epsilon := h.add("epsilon", 3)
	alpha.rec.Expect(t, wait, conn.Established)
	beta.rec.Expect(t, wait, conn.FailedRetrying)
	gamma.rec.Expect(t, wait, conn.Established)
	delta.rec.Expect(t, wait, conn.Established)
	epsilon.rec.Expect(t, wait, conn.Established)
	gamma.exhaust(t)

	ln, err := Listen("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.cons.Serve(serveCtx, ln) }()
	defer func() {
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String() + "/"

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	ctx, cancelAll := context.WithTimeout(ctx, 90*time.Second)
	defer cancelAll()

	card := func(name, state string) string {
		return fmt.Sprintf(`tbody.card[data-server=%q][data-state=%q]`, name, state)
	}
	opened := map[string]bool{} // the servers whose diagram is shown
	// waitCard waits until the server's row shows state, in its badge
	// and, when its diagram is shown, as the diagram's highlighted state.
	waitCard := func(name, state string) {
		t.Helper()
		step, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(step, chromedp.WaitVisible(card(name, state)+" .badge")); err != nil {
			t.Fatalf("row %s did not show %s: %v", name, state, err)
		}
		if opened[name] {
			if err := chromedp.Do(step,
				chromedp.WaitVisible(card(name, state)+` .diagram .node.current[data-state=`+fmt.Sprintf("%q", state)+`]`),
			); err != nil {
				t.Fatalf("the diagram of %s did not show %s: %v", name, state, err)
			}
		}
		badge, err := chromedp.Run(step, chromedp.Text(card(name, state)+" .badge"))
		if err != nil || badge != state {
			t.Fatalf("card %s: badge %q (%v), want %q", name, badge, err, state)
		}
	}

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	waitCard("alpha", "established")
	waitCard("beta", "failed-retrying")
	waitCard("gamma", "exhausted")
	waitCard("delta", "established")
	waitCard("epsilon", "established")
	// Five servers fit one screen, and a healthy server's row shows no
	// alarm colour ("last cause: none" included).
	fits, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const rows = document.querySelectorAll("tbody.card");
		const bottom = document.querySelector("#servers").getBoundingClientRect().bottom;
		return rows.length + " rows, table bottom " + Math.round(bottom) + ", page " + document.documentElement.scrollHeight + "x" + document.documentElement.scrollWidth;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	var rows, bottom, height, width int
	if _, err := fmt.Sscanf(fits, "%d rows, table bottom %d, page %dx%d", &rows, &bottom, &height, &width); err != nil || rows != 5 || bottom > 800 || height > 800 || width > 1280 {
		t.Errorf("five servers at 1280x800: %s (%v); want 5 rows within the viewport", fits, err)
	}
	noRed(t, ctx, `tbody.card[data-server="alpha"]`)
	// A marker the page would lose on a reload.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "console-initial.png")

	// The diagram on demand: only the current state is highlighted, so a
	// healthy server's drawing shows no alarm colour either.
	for _, name := range []string{"alpha", "gamma"} {
		if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`tbody.card[data-server=%q] button.details`, name))); err != nil {
			t.Fatal(err)
		}
		opened[name] = true
	}
	waitCard("alpha", "established")
	waitCard("gamma", "exhausted")
	noRed(t, ctx, `tbody.card[data-server="alpha"]`)
	screenshot(t, ctx, "console-diagram.png")

	// A crash: lost-reconnecting, then back after the backoff.
	alpha.srv.Crash()
	waitCard("alpha", "lost-reconnecting")
	screenshot(t, ctx, "console-lost.png")
	nestedDrawing(t, ctx, `tbody.card[data-server="alpha"] .diagram`)
	h.clk.Add(time.Second)
	waitCard("alpha", "established")

	// Reconnect on the exhausted server.
	gamma.srv.Plan(conntest.Accept)
	if err := chromedp.Do(ctx, chromedp.Click(card("gamma", "exhausted")+" button.reconnect")); err != nil {
		t.Fatal(err)
	}
	waitCard("gamma", "established")
	if n := gamma.reconnects.Load(); n != 1 {
		t.Errorf("gamma's Reconnect was called %d times, want 1", n)
	}
	msg, err := chromedp.Run(ctx, chromedp.Poll[string](
		`(() => { const m = document.querySelector('tbody.card[data-server="gamma"] .msg').textContent; return m === "reconnecting…" ? null : m })()`,
		chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || msg != "reconnected" {
		t.Errorf("gamma's message %q (%v), want reconnected", msg, err)
	}
	still, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`))
	if err != nil || !still {
		t.Errorf("the page was reloaded (%v)", err)
	}
	// A server without per-client instances or callers says so.
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const card = document.querySelector('tbody.card[data-server="gamma"]');
		return card.querySelector(".f-instances").textContent + "|" + card.querySelector(".f-callers").textContent;
	})()`))
	if err != nil || facts != "none|none" {
		t.Errorf("gamma's instances and callers %q (%v), want none|none", facts, err)
	}
	// Under the console's Content-Security-Policy the page's stylesheet and
	// the diagram's inline <style> (allowed by its hash) both apply.
	styled, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const box = document.querySelector('tbody.card[data-server="gamma"] .diagram .node.current path');
		return getComputedStyle(box).stroke + " " + getComputedStyle(document.querySelector("#reconnect-all")).cursor;
	})()`))
	if err != nil || !strings.HasPrefix(styled, "rgb(10, 88, 202) ") || strings.HasSuffix(styled, " auto") {
		t.Errorf("styles under the CSP: %q (%v), want the diagram's highlight stroke rgb(10, 88, 202) and style.css's button cursor", styled, err)
	}
	screenshot(t, ctx, "console-after.png")
}

// alarmColours are the console's alarm colours as the browser computes
// them: --fail-line, --fail-text and --fail-bg.
var alarmColours = []string{"rgb(176, 42, 55)", "rgb(132, 32, 41)", "rgb(248, 215, 218)"}

// noRed checks that nothing shown within sel is drawn in an alarm colour.
func noRed(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	red, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const alarm = `+"`"+strings.Join(alarmColours, "|")+"`"+`.split("|");
		const out = [];
		for (const el of document.querySelector(`+strconv.Quote(sel)+`).querySelectorAll("*")) {
			if (!el.getClientRects().length) continue; // not shown
			const cs = getComputedStyle(el);
			for (const prop of ["color", "backgroundColor", "borderLeftColor", "borderTopColor", "fill", "stroke"]) {
				if (alarm.includes(cs[prop])) out.push((el.className.baseVal ?? el.className) + " " + (el.textContent || "").trim().slice(0, 30) + ": " + prop + " " + cs[prop]);
			}
		}
		return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range red {
		t.Errorf("%s shows an alarm colour: %s", sel, r)
	}
}

// nestedDrawing checks, in the card's drawing as the browser laid it out,
// that the machine is drawn nested: each state of conn.Table() is a node
// inside the cluster of each superstate it lies in, and the arrows that
// leave the current state are marked from its own node and from its
// superstates' (alpha is in lost-reconnecting: reconnect from waiting,
// dispose from live).
func nestedDrawing(t *testing.T, ctx context.Context, diagram string) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const svg = document.querySelector(`+strconv.Quote(diagram)+` + " svg");
		const inside = (a, b) => a.left >= b.left && a.right <= b.right && a.top >= b.top && a.bottom <= b.bottom;
		const out = [];
		for (const node of svg.querySelectorAll(".node[data-state]")) {
			const box = node.getBoundingClientRect();
			let where = [];
			for (const sup of node.dataset.within.split(" ").filter(Boolean)) {
				const cluster = svg.querySelector('.cluster[data-state="' + sup + '"]');
				where.push(sup + (cluster && inside(box, cluster.getBoundingClientRect()) ? "" : "(outside)"));
			}
			out.push(node.dataset.state + " in " + (where.join(",") || "-"));
		}
		for (const edge of svg.querySelectorAll(".edge.next")) out.push("next " + edge.dataset.from + " -> " + edge.dataset.to);
		return out.sort();
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	spec := conn.Table()
	for _, leaf := range spec.Leaves() {
		var within []string
		for _, p := range spec.Ancestors(leaf) {
			within = append(within, string(p))
		}
		want = append(want, string(leaf)+" in "+cmp.Or(strings.Join(within, ","), "-"))
	}
	want = append(want, "next live -> disposing", "next lost-reconnecting -> connecting", "next waiting -> connecting")
	slices.Sort(want)
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("the drawing in the browser (-want +got):\n%s", diff)
	}
}

// screenshot saves the viewport as a PNG in $MCPFSM_ARTIFACTS (or the
// test's temporary directory) and logs where.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(envArtifacts)
	if dir == "" {
		dir = t.TempDir()
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
