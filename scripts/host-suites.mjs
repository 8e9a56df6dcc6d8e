// The suites that need no container engine: the host lane of scripts/test-lanes.mjs
// runs them on the Node `npm test` was started with, and scripts/test-node24.mjs
// again on Node 24; the engine lane leaves them out. Each is run with DOCKER_HOST
// pointing at nothing, so a suite that started to need an engine fails there
// rather than quietly use one.
//
// Not here: test/listeners (every suite drives `roster server`, which needs
// boxes). test/web is: its pages that do arrive get a deadline a busy machine
// can't reach, and only the pages that never finish are held to a short one.
import { existsSync } from "node:fs";
import { join } from "node:path";

export const HOST_SUITES = [
  "test/unit",
  "test/gateway",
  "test/actions",
  "test/web",
  // refused before any box: a bad config, a bad envelope, a bad push
  "test/security/bad-config.test.ts",
  "test/security/envelope-fuzz.test.ts",
  "test/repos/push-checks.test.ts",
  // the server's socket and the console's readers, on files a test writes
  "test/server/run-socket.test.ts",
  "test/console/connections-page.test.ts",
  "test/console/console-peers.test.ts",
  "test/console/door-page.test.ts",
  "test/console/door-summary.test.ts",
  "test/console/spend-summary.test.ts",
];

/**
 * Of those, the ones run again on Node 24 (scripts/test-node24.mjs): where the
 * Node version changes what roster does — the gateway's TLS and sockets, the
 * action host's listeners and SMTP, the server's socket, child processes, the
 * chat platforms' WebSocket and HTTP clients. Config parsing, judging and the
 * console's readers are plain JavaScript: one Node is enough for them.
 */
export const NODE24_SUITES = [
  "test/gateway",
  "test/actions",
  "test/server/run-socket.test.ts",
  "test/unit/cli.test.ts",
  "test/unit/closed-ports.test.ts",
  "test/unit/health-client.test.ts",
  "test/unit/mcp-client.test.ts",
  // on Node 24 the server runs as in the box, its types stripped by Node itself
  "test/unit/roster-mcp.test.ts",
  "test/unit/slack-stand-in.test.ts",
  "test/unit/discord-stand-in.test.ts",
];

/**
 * The suites, each checked to be there: one renamed or removed would be run
 * by neither lane's filter as meant (the engine lane would pick its new name
 * up, the host lane would quietly run nothing for it), so it stops the run.
 */
export function hostSuites(root, suites = HOST_SUITES) {
  const outside = suites.filter(
    (suite) => !HOST_SUITES.some((host) => suite === host || suite.startsWith(`${host}/`)),
  );
  if (outside.length) {
    console.error(
      `host-suites: ${outside.join(", ")} named for Node 24 but not a host suite: mend the lists`,
    );
    process.exit(2);
  }
  return suitesThere(root, suites, "scripts/host-suites.mjs");
}

/**
 * The suites a list names, each checked to be there: one renamed or removed
 * would quietly run somewhere it was not meant to, or nowhere, so it stops the
 * run, naming the list to mend.
 */
export function suitesThere(root, suites, list) {
  const missing = suites.filter((suite) => !existsSync(join(root, suite)));
  if (missing.length) {
    console.error(`${missing.join(", ")} named in ${list} but not there: mend the list`);
    process.exit(2);
  }
  return suites;
}

/** DOCKER_HOST for a host-lane process: a socket that is never there. */
export const NO_ENGINE = "unix:///nonexistent/roster-host-lane-has-no-engine.sock";

/** vitest --exclude globs that leave the host suites out of the engine lane. */
export function excludeHostSuites() {
  return HOST_SUITES.flatMap((suite) => [
    "--exclude",
    suite.endsWith(".test.ts") ? suite : `${suite}/**`,
  ]);
}
