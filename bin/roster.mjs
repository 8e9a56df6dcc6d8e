#!/bin/sh
":" //; ulimit -n "$(ulimit -Hn)" 2>/dev/null; n=node; m="$0"; if [ -L "$m" ]; then m="$(readlink -f "$m" 2>/dev/null)"; fi; case "$m" in /*) ;; *) m="$PWD/$m" ;; esac; m="${m%/bin/*}/.cache/host-node"; if [ -f "$m" ]; then read -r n <"$m"; [ -x "$n" ] || { echo "roster: the Node \`npm ci\` brought in (${n:-none named}, in $m) is not there: run npm ci again" >&2; exit 1; }; PATH="${n%/*}:$PATH"; export PATH; fi; ROSTER_DEFERRED_CA_CERTS="${NODE_EXTRA_CA_CERTS-}"; export ROSTER_DEFERRED_CA_CERTS; unset NODE_EXTRA_CA_CERTS; g=; [ "$1" = gateway ] && g=--initial-old-space-size=64; exec "$n" --max-semi-space-size=2 $g "$0" "$@"
// The `roster` command. The host runner is compiled into dist/ (by `npm ci`
// through prepare, or `npm run build`); a checkout whose runner/ changed since
// then runs the TypeScript directly (tsx), so `npx roster` is never stale.
//
// The two lines above are read by sh when the file runs as a command (Node
// reads a string and a comment). They pick the Node: the one .cache/host-node
// names when there is that file (beside this checkout's bin/, found through the
// symlink npx runs, and only then with `readlink`: scripts/host-node.mjs writes
// it at `npm ci` on a machine
// whose Node is older than roster supports, and it names the Node brought in
// from the npm registry), else the machine's `node`. The chosen Node's folder
// goes first on PATH, so a child that runs `node` by name gets the same one. A
// file that names a binary no longer there stops here with one line, no Node
// started. They start it without NODE_EXTRA_CA_CERTS, with the shell's own
// `unset` and `exec` (no helper process: each cost ~10 ms of every command's
// start here). Given that variable, Node
// parses its whole trust store before running anything, which cost every
// command ~60 ms. It is put back here for every process roster starts, and
// roster's own outbound TLS (the executors) trusts that file explicitly
// (runner/boundary/gateway/trust/host-trust.ts). The soft limit on open files is
// raised to the hard one first: the server and every gateway (standalone or
// embedded, forked from this) hold a descriptor per box connection, and a
// default soft limit of 1024 is reached by a few busy boxes. The young generation is capped
// as for every process that runs the gateway, and `roster gateway …` gets the
// gateway's larger first old-generation limit (GATEWAY_NODE_FLAGS in
// runner/boundary/gateway/settings/defaults.ts says why, and why gc is not exposed).
//
// `node bin/roster.mjs` skips those lines: started so by a Node older than
// roster supports (tests run it with their own Node, `npm run roster` too),
// it runs itself again through them, on the Node .cache/host-node names.
import { existsSync, readFileSync, statSync } from "node:fs";
import * as nodeModule from "node:module";
import { fileURLToPath } from "node:url";

const hostNode = fileURLToPath(new URL("../.cache/host-node", import.meta.url));
if (existsSync(hostNode) && readFileSync(hostNode, "utf8").trim() !== process.execPath) {
  // the floor is package.json's "engines"; read only on this rare path
  const manifest = fileURLToPath(new URL("../package.json", import.meta.url));
  const floor = Number(
    /^>=\s*(\d+)/.exec(JSON.parse(readFileSync(manifest, "utf8")).engines?.node ?? "")?.[1],
  );
  if (Number(process.versions.node.split(".")[0]) < floor) {
    const { spawn } = await import("node:child_process");
    const again = spawn("/bin/sh", [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: "inherit",
    });
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"])
      process.on(signal, () => again.kill(signal));
    again.on("error", (error) => {
      process.stderr.write(`roster: running on the Node npm ci brought in: ${error.message}\n`);
      process.exit(1);
    });
    const [code, signal] = await new Promise((resolve) =>
      again.on("exit", (...ended) => resolve(ended)),
    );
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  }
}

const deferred = process.env.ROSTER_DEFERRED_CA_CERTS;
delete process.env.ROSTER_DEFERRED_CA_CERTS;
if (deferred) process.env.NODE_EXTRA_CA_CERTS = deferred;

const compiled = fileURLToPath(new URL("../dist/roster.js", import.meta.url));
const checkout = fileURLToPath(new URL("..", import.meta.url));

/**
 * dist/ is current when no source it was built from (dist/sources.json, which
 * the build writes) changed or went since: about 7 ms of stats, where walking
 * runner/ took 20. A source added since is read only through one changed since.
 */
function compiledIsFresh() {
  let built;
  let sources;
  try {
    built = statSync(compiled).mtimeMs;
    sources = JSON.parse(readFileSync(new URL("../dist/sources.json", import.meta.url), "utf8"));
  } catch {
    return false;
  }
  if (!Array.isArray(sources) || sources.length === 0) return false;
  for (const source of sources) {
    const seen = statSync(`${checkout}${source}`, { throwIfNoEntry: false });
    if (!seen || seen.mtimeMs > built) return false;
  }
  return true;
}

const fresh = compiledIsFresh();
if (fresh) {
  // V8's compiled code for dist/ kept between starts (Node 22.1 and later; a no-op
  // before): each roster process starts ~15 ms sooner. Kept in the checkout's own
  // .cache/, which only its owner writes, never a temp folder another user could
  // fill; where it can't be written Node compiles as before.
  nodeModule.enableCompileCache?.(fileURLToPath(new URL("../.cache/compiled", import.meta.url)));
} else {
  const { register } = await import("tsx/esm/api");
  register();
}
// `roster run` (`roster worker run`) with a server running is handed over
// without building the command tree (runner/cli/handed-run.ts says what it
// takes); anything it leaves, and every other command, goes to the tree.
let status;
if (process.argv[2] === "run" || process.argv[2] === "worker") {
  const { handedRun } = fresh
    ? await import("../dist/handed.js")
    : await import("../runner/cli/handed-run.ts");
  status = await handedRun(process.argv);
}
if (status === undefined) {
  const { main } = fresh
    ? await import("../dist/roster.js")
    : await import("../runner/cli/main.ts");
  status = await main(process.argv);
}
process.exitCode = status;
