#!/usr/bin/env node
// The engine-facing suites again, under each other engine roster supports:
// Podman (rootful, through the Docker-compatible socket `podman system
// service` serves) and Docker with gVisor's runsc. The whole suite has run
// under Docker/runc before this (package.json "test").
//
// Each engine is set up by box/with-docker.sh (Podman's service and the box
// image loaded into it; runsc registered with dockerd). An engine this machine
// can't run is said by name and why; with CI=true that fails the run: a
// silent pass is a defect. ROSTER_ENGINES=podman,runsc picks engines.
//
// The suites are the ones that drive a box through each step the seam has
// (runner/box/engine.ts): one-shot runs, box exec, sessions, toolchains and the
// tools volume, the door and its bounds, orphan recovery, and the escape
// suite. Image builds and the offline base run under Docker only: they take
// most of CI's time and the same build API is exercised by toolchains here.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PODMAN_SOCKET = "/run/podman/podman.sock";

export const ENGINE_SUITES = [
  "test/box/run.test.ts",
  "test/box/exec.test.ts",
  "test/box/toolchain.test.ts",
  "test/box/tools-volume.test.ts",
  "test/sessions/talk.test.ts",
  "test/server/server.test.ts",
  "test/security/escape.test.ts",
];

/**
 * Per engine: what it runs of ENGINE_SUITES, and suites of its own (which say
 * so in the other passes). Under runsc only what a box's runtime changes runs:
 * image builds, the tools volume and the server's recovery ask nothing of it.
 */
const RUNTIME_BLIND = [
  "test/box/toolchain.test.ts",
  "test/box/tools-volume.test.ts",
  "test/server/server.test.ts",
];
const SUITES_OF = {
  podman: [...ENGINE_SUITES, "test/box/podman.test.ts"],
  runsc: ENGINE_SUITES.filter((suite) => !RUNTIME_BLIND.includes(suite)),
};

const ENGINES = {
  podman: {
    label: "Podman (rootful)",
    env: { DOCKER_HOST: `unix://${PODMAN_SOCKET}` },
    why: () => {
      if (!existsSync(PODMAN_SOCKET))
        return `no Podman API socket at ${PODMAN_SOCKET} (box/with-docker.sh starts \`podman system service\`)`;
      const image = spawnSync("podman", ["image", "exists", "roster-box:latest"]);
      if (image.error) return `podman is not installed (${image.error.message})`;
      if (image.status !== 0)
        return "Podman has no roster-box:latest (box/with-docker.sh loads it)";
      return undefined;
    },
  },
  runsc: {
    label: "Docker with gVisor (runsc)",
    env: { ROSTER_TEST_RUNTIME: "runsc" },
    why: () => {
      const info = spawnSync("docker", ["info", "--format", "{{json .Runtimes}}"], {
        encoding: "utf8",
      });
      if (info.status !== 0) return `docker info failed: ${(info.stderr ?? "").trim()}`;
      if (!/"runsc"/.test(info.stdout))
        return "dockerd lists no runsc runtime (`roster box doctor --fix` registers it)";
      return undefined;
    },
  },
};

const picked = (process.env.ROSTER_ENGINES ?? "podman,runsc")
  .split(",")
  .map((name) => name.trim())
  .filter(Boolean);
let failed = false;
for (const name of picked) {
  const engine = ENGINES[name];
  if (!engine) {
    console.error(
      `test-engines: unknown engine "${name}" (known: ${Object.keys(ENGINES).join(", ")})`,
    );
    failed = true;
    continue;
  }
  const why = engine.why();
  if (why) {
    const verdict = process.env.CI === "true" ? "FAILED" : "not run";
    console.error(`test-engines: ${engine.label}: ${verdict}: this machine can't run it: ${why}`);
    if (process.env.CI === "true") failed = true;
    continue;
  }
  const suites = SUITES_OF[name];
  console.error(`test-engines: ${engine.label}: ${suites.length} suites`);
  const started = Date.now();
  const result = spawnSync("npx", ["vitest", "run", ...suites], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, ...engine.env },
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  const ok = result.status === 0;
  console.error(`test-engines: ${engine.label}: ${ok ? "passed" : "FAILED"} in ${seconds} s`);
  if (!ok) failed = true;
}
process.exit(failed ? 1 : 0);
