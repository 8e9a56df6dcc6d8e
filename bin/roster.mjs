#!/bin/sh
":" //; ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec env -u NODE_EXTRA_CA_CERTS ROSTER_DEFERRED_CA_CERTS="${NODE_EXTRA_CA_CERTS-}" node --max-semi-space-size=2 --expose-gc "$0" "$@"
// The `roster` command. The host runner is compiled into dist/ (by `npm ci`
// through prepare, or `npm run build`); a checkout whose runner/ changed since
// then runs the TypeScript directly (tsx), so `npx roster` is never stale.
//
// The two lines above are read by sh when the file runs as a command (Node
// reads a string and a comment): they start Node without NODE_EXTRA_CA_CERTS,
// the same through GNU, BSD or busybox tools. Given that variable, Node
// parses its whole trust store before running anything, which cost every
// command ~60 ms. It is put back here for every process roster starts, and
// roster's own outbound TLS (the executors) trusts that file explicitly
// (runner/boundary/gateway/trust/host-trust.ts). The soft limit on open files is
// raised to the hard one first: the server and every gateway (standalone or
// embedded, forked from this) hold a descriptor per box connection, and a
// default soft limit of 1024 is reached by a few busy boxes. The young generation is capped
// as for every process that runs the gateway (GATEWAY_NODE_FLAGS in
// runner/boundary/gateway/settings/defaults.ts says why, and why gc is exposed).
import { readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const deferred = process.env.ROSTER_DEFERRED_CA_CERTS;
delete process.env.ROSTER_DEFERRED_CA_CERTS;
if (deferred) process.env.NODE_EXTRA_CA_CERTS = deferred;

const compiled = fileURLToPath(new URL("../dist/roster.js", import.meta.url));
const sources = fileURLToPath(new URL("../runner", import.meta.url));

function compiledIsFresh() {
  let built;
  try {
    built = statSync(compiled).mtimeMs;
  } catch {
    return false;
  }
  for (const entry of readdirSync(sources, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts")) continue;
    const path = `${entry.parentPath ?? entry.path}/${entry.name}`;
    if (statSync(path).mtimeMs > built) return false;
  }
  return true;
}

let main;
if (compiledIsFresh()) {
  ({ main } = await import("../dist/roster.js"));
} else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../runner/cli/main.ts"));
}
process.exitCode = await main(process.argv);
