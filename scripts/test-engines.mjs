#!/usr/bin/env node
// The engine-facing suites again, under each other engine roster supports:
// Podman (rootful, through the Docker-compatible socket `podman system
// service` serves) and Docker with gVisor's runsc. The whole suite has run
// under Docker/runc before this (package.json "test").
//
// Each engine is set up by box/with-docker.sh (Podman's service; runsc
// registered with dockerd); Podman gets the box image the Docker pass built
// from here. An engine this machine
// can't run is said by name and why; with CI=true that fails the run: a
// silent pass is a defect. ROSTER_ENGINES=podman,runsc picks engines.
//
// The suites are the ones that drive a box through each step the seam has
// (runner/box/engine.ts): one-shot runs, box exec, sessions, toolchains and the
// tools volume, the door and its bounds, orphan recovery, and the escape
// suite. Image builds and the offline base run under Docker only: they take
// most of CI's time and the same build API is exercised by toolchains here.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PODMAN_SOCKET = "/run/podman/podman.sock";
const BOX_IMAGE = "roster-box:latest";
/** runner/box/layout.ts LABELS.source: the hash of what an image was built from. */
const SOURCE_LABEL = "org.roster.source";

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
      // a socket file alone proves nothing: a service that was stopped leaves it behind
      const ping = spawnSync(
        "podman",
        ["--remote", "--url", `unix://${PODMAN_SOCKET}`, "version"],
        { encoding: "utf8", timeout: 15_000 },
      );
      if (ping.error?.code === "ENOENT") return "podman is not installed";
      if (ping.status !== 0)
        return `no Podman API service answers at ${PODMAN_SOCKET} (box/with-docker.sh starts \`podman system service\`): ${(ping.stderr ?? "").trim().split("\n").at(-1)}`;
      return loadBoxImage();
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

/**
 * Gives Podman the box image the Docker pass just built and tested (`docker
 * save | podman load`, labels and all), unless it already has one built from
 * these sources: the Podman pass then tests the same image, and its setup
 * (test/support/global-setup.ts) finds it current and builds nothing.
 * Returns why it could not, or undefined.
 */
function loadBoxImage() {
  const source = (engine) => {
    const labels = engine === "docker" ? ".Config.Labels" : ".Labels";
    const format = `{{index ${labels} "${SOURCE_LABEL}"}}`;
    const inspect = spawnSync(engine, ["image", "inspect", BOX_IMAGE, "--format", format], {
      encoding: "utf8",
    });
    return inspect.status === 0 ? inspect.stdout.trim() : "";
  };
  const built = source("docker");
  if (!built) return `Docker has no ${BOX_IMAGE} to give Podman (the Docker pass builds it)`;
  if (source("podman") === built) return undefined;
  console.error(`test-engines: loading ${BOX_IMAGE} from Docker into Podman`);
  const load = spawnSync(
    "bash",
    ["-o", "pipefail", "-c", `docker save ${BOX_IMAGE} | podman load --quiet`],
    { encoding: "utf8" },
  );
  if (load.status !== 0) return `docker save | podman load failed: ${(load.stderr ?? "").trim()}`;
  if (source("podman") !== built)
    return `Podman's ${BOX_IMAGE} is not the one Docker built after loading it`;
  return undefined;
}

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
    env: { ...process.env, ...engine.env, ROSTER_TEST_PASS: name },
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  const ok = result.status === 0;
  console.error(`test-engines: ${engine.label}: ${ok ? "passed" : "FAILED"} in ${seconds} s`);
  if (!ok) failed = true;
}
process.exit(failed ? 1 : 0);
