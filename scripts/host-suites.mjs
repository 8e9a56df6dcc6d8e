// The suites that need no container engine: the host lane of scripts/test-lanes.mjs
// runs them on the Node `npm test` was started with, and scripts/test-node24.mjs
// again on Node 24. Each is run with DOCKER_HOST pointing at nothing, so a suite
// that started to need an engine fails there rather than quietly use one.
// Not here: test/listeners (every suite drives `roster server`, which needs boxes).
export const HOST_SUITES = ["test/unit", "test/gateway", "test/actions"];

/** DOCKER_HOST for a host-lane process: a socket that is never there. */
export const NO_ENGINE = "unix:///nonexistent/roster-host-lane-has-no-engine.sock";
