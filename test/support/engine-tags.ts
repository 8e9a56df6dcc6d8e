/**
 * The tags that mark a case for the engine matrix (scripts/test-engines.mjs).
 * Every case runs under Docker with runc; a case tagged here runs again:
 *
 *   engine   under Podman: it depends on what the container engine's API does
 *            (builds, volumes, labels, events, attach, orphan lookup);
 *   runtime  under Podman and under Docker with gVisor (runsc): it depends on
 *            what the box's runtime enforces (the lockdown, mounts, limits,
 *            signals, out-of-memory kills).
 *
 * A case that never starts a container, or whose container's engine and
 * runtime change nothing it checks, is not tagged: running it again proves
 * nothing new.
 */
export const ENGINE_TAGS = [
  { name: "engine", description: "runs again under Podman" },
  { name: "runtime", description: "runs again under Podman and under Docker with runsc" },
];
