// Package console is the operator console of a host running many
// supervisors: an [http.Handler] with a live status page, a JSON API to
// read the status and reconnect servers, an event stream, and an optional
// /metrics endpoint; and a [Client] for the commands that talk to it.
//
// A host implements [Host] (its servers, and how to reload its
// configuration), passes [Console.Record] as each supervisor's
// Config.OnTransition (or calls it from its own), and serves the console:
//
//	cons := console.New(host, console.Options{Token: token, Metrics: promHandler, ToolsChanged: reg.Changed})
//	ln, err := console.Listen("127.0.0.1:7777", token) // refuses a non-loopback address without a token
//	...
//	go cons.Serve(ctx, ln)
//
// # Endpoints
//
//	GET  /                            the status page (HTML, CSS and JS embedded; no CDN, works offline)
//	GET  /diagram.svg                 the connection machine, as diagrams/connection.svg draws it
//	GET  /api/status                  a StatusReport as JSON
//	GET  /api/events                  Server-Sent Events: a "status" event (data: a StatusReport)
//	                                  at once, after every change, and every Options.Keepalive
//	POST /api/servers/{name}/reconnect reconnect one server now; answers a ReconnectResult when the
//	                                  attempt ends: 200 connected, 502 the attempt failed (error
//	                                  says why), 409 the server is closed, 404 unknown server
//	POST /api/servers/{name}/signin   start the operator's sign-in to a server that needs one
//	                                  (state needs-authorization; see SignInStarter): 200 and a
//	                                  SignInResult with the authorization URL to open, 409 the
//	                                  server needs none, 501 the host cannot, 502 it did not start
//	POST /api/reconnect               reconnect every server at once; a ReconnectAllResult,
//	                                  200 when all connected, 502 otherwise
//	POST /api/reload                  re-read the host's configuration: 200 and a StatusReport,
//	                                  500 when it failed (error says what was kept or applied),
//	                                  501 when the host cannot reload
//	GET  /metrics                     Options.Metrics, when set
//
// Every error is JSON, {"error": "..."}, with a fitting status: 404 for an
// unknown path or server, 405 with an Allow header for a wrong method, 401
// for a missing token, 403 for a refused host name or origin, 413 for a
// body over MaxBodyBytes, 429 with Retry-After for a reconnect too soon.
//
// # The JSON of /api/status
//
// These names are stable; a new field may be added, none is renamed.
//
//	now                 RFC 3339 time on the host's clock
//	servers[]           sorted by name:
//	  name              the server's name in the configuration
//	  state             the conn.State, e.g. "established", "lost-reconnecting"
//	  phrase            conn.State.Phrase, e.g. "connection lost; reconnecting"
//	  alarm             true for the alarm states of conn.Table (red in the diagrams):
//	                    the server is not connected, or not as it should be
//	  attempt           0 on the initial attempt, n of maxAttempts during an outage
//	  maxAttempts       the reconnect policy's attempt budget
//	  since             when the current state was entered (omitted if unknown)
//	  nextRetry         when the next attempt starts (only while backing off)
//	  delayMs           the current backoff delay (only while backing off)
//	  lastError         the last failure or loss, with its cause (omitted if none)
//	  generation        the latest generation (transport and session) started
//	  tools             the public names of the registered tools, sorted
//	  toolCount         len(tools)
//	  sandbox[]         what the server's sandbox allows, one line an aspect
//	                    (read, write, network, limits); omitted when it has none
//	  signIn            true when the server needs a sign-in the operator can start
//	                    (POST /api/servers/{name}/signin); omitted otherwise
//	  transitions[]     the recent transitions, oldest first (Options.HistorySize):
//	    at, from, to, event, attempt, maxAttempts, delayMs, error, generation
//
// # Access
//
// The console's access rule is package access's, the same as the MCP
// endpoint's (Options.Rule, or one made from Options.Token). Without a
// token the console must listen on a loopback address ([Listen] refuses
// others) and answers only requests whose Host is a loopback name, so a
// web page elsewhere cannot reach it by rebinding its own name; with one,
// the Host must also be the connection's own address or a name the rule
// allows (-allow-host). With a token (flag -token-file, MCPFSM_TOKEN, or
// MCPFSM_HTTP_TOKEN) every request needs "Authorization: Bearer TOKEN"; a
// browser opens /?token=TOKEN once, which sets an HttpOnly,
// SameSite=Strict cookie and redirects to the page without the token in
// its address. A request that carries an Origin header must come from the
// console's own origin (or one the rule allows), whatever its method.
//
// Every answer carries a Content-Security-Policy (the page's own files
// only, no framing), X-Frame-Options DENY, X-Content-Type-Options nosniff
// and Referrer-Policy no-referrer. Bodies are bounded to MaxBodyBytes, and
// a manual reconnect of one server (or of all) within ReconnectInterval of
// the last is answered 429 with Retry-After.
//
// # The diagram
//
// The page shows the drawing of diagrams/connection.svg, which Graphviz
// made from the DOT that fsm writes for conn.Table() (go generate ./conn):
// the machine the docs show, superstates as clusters, served as
// /diagram.svg with a data-state on every state and superstate and a
// data-from and data-to on every arrow. The tests hold that drawing
// against conn.Table(), so a table changed without drawing it anew fails
// them. It keeps the colours of the committed diagrams (alarm states
// #f8d7da on #b02a37); the page outlines the current state in #0a58ca
// (filled #cfe2ff when it is not an alarm state), draws the last
// transition in blue, and labels only the arrows that leave the current
// state, its own and its superstates'.
package console
