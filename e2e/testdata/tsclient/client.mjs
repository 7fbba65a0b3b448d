// A client of 'mcpfsm serve' built on the TypeScript MCP SDK, which
// e2e/tsclient_test.go drives: a third-party client, not mcpfsm's own.
//
// Usage: node client.mjs stdio COMMAND [ARG...]   (spawns serve itself)
//        node client.mjs http URL                 (Streamable HTTP)
//
// It declares elicitation, sampling and roots, and answers them with fixed
// values: elicitation accepts {name: "ts"}, sampling answers the text
// "ts-sampled", roots lists file:///ts. It reads one call a line on stdin,
// {"id": N, "tool": NAME, "args": {...}, "progress": BOOL}, and writes one
// JSON line per thing it sees on stdout: "connected", "result", "error",
// "progress", "elicitation", "sampling", "roots". The calls run
// concurrently, so that the test can wait on each one with its own
// deadline. At the end of stdin it closes the session and exits.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
	CreateMessageRequestSchema,
	ElicitRequestSchema,
	ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const say = (v) => process.stdout.write(JSON.stringify(v) + "\n");

const [front, ...rest] = process.argv.slice(2);
let transport;
if (front === "stdio" && rest.length > 0) {
	// serve's stderr is the test's to read: pass it through.
	transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "inherit" });
} else if (front === "http" && rest.length === 1) {
	transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else {
	console.error("usage: client.mjs stdio COMMAND [ARG...] | client.mjs http URL");
	process.exit(2);
}

const client = new Client(
	{ name: "mcpfsm-tsclient", version: "1.0.0" },
	{ capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } } },
);
client.setRequestHandler(ElicitRequestSchema, (req) => {
	say({ event: "elicitation", message: req.params.message });
	return { action: "accept", content: { name: "ts" } };
});
client.setRequestHandler(CreateMessageRequestSchema, (req) => {
	const first = req.params.messages[0]?.content;
	say({ event: "sampling", text: first?.type === "text" ? first.text : "" });
	return { role: "assistant", model: "ts-model", content: { type: "text", text: "ts-sampled" } };
});
client.setRequestHandler(ListRootsRequestSchema, () => {
	say({ event: "roots" });
	return { roots: [{ uri: "file:///ts", name: "ts" }] };
});

try {
	await client.connect(transport);
} catch (err) {
	say({ event: "error", id: 0, message: `connect: ${err?.message ?? err}` });
	process.exit(1);
}
say({
	event: "connected",
	server: client.getServerVersion()?.name ?? "",
	protocol: transport.protocolVersion ?? "",
});

const pending = new Set();
async function call(line) {
	let req;
	try {
		req = JSON.parse(line);
	} catch (err) {
		say({ event: "error", id: 0, message: `bad input line ${JSON.stringify(line)}: ${err.message}` });
		return;
	}
	const { id, tool, args = {}, progress = false } = req;
	const options = { timeout: 30000 };
	if (progress) {
		options.onprogress = (p) => say({ event: "progress", id, progress: p.progress, total: p.total ?? null });
	}
	try {
		const res = await client.callTool({ name: tool, arguments: args }, undefined, options);
		const text = (res.content ?? [])
			.filter((c) => c.type === "text")
			.map((c) => c.text)
			.join("");
		say({ event: "result", id, text, isError: res.isError === true });
	} catch (err) {
		say({ event: "error", id, message: String(err?.message ?? err) });
	}
}

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
	if (line.trim() === "") return;
	const p = call(line);
	pending.add(p);
	p.finally(() => pending.delete(p));
});
rl.on("close", async () => {
	await Promise.allSettled([...pending]);
	await client.close();
	process.exit(0);
});
