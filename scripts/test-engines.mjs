#!/usr/bin/env node
// The cases that depend on the container engine or the box's runtime, again
// under each other engine roster supports: Podman (rootful, through the
// Docker-compatible socket `podman system service` serves) and Docker with
// gVisor's runsc, in the host lane of scripts/test-lanes.mjs while the Docker
// pass goes on (each pass's escape suite has an outside host of its own).
//
// Which cases: those tagged `engine` (Podman only) or `runtime` (Podman and
// runsc), test/support/engine-tags.ts says why each. The files are found by
// their tags, and vitest's --tags-filter runs only the tagged cases in them:
// a case that never starts a container, or whose engine changes nothing it
// checks, is not run again.
//
// Each engine is set up by box/with-docker.sh (Podman's service; runsc
// registered with dockerd); Podman gets the box image the Docker pass built
// from here. An engine this machine can't run is said by name and why; with
// CI=true that fails the run: a silent pass is a defect.
// ROSTER_ENGINES=podman,runsc picks engines.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PODMAN_SOCKET = "/run/podman/podman.sock";
const BOX_IMAGE = "roster-box:latest";
/** runner/boundary/box/layout.ts LABELS.source: the hash of what an image was built from. */
const SOURCE_LABEL = "org.roster.source";

/** Test files under test/ that tag a case or a block with one of `tags`. */
function taggedSuites(tags, dir = join(root, "test")) {
  const tagged = new RegExp(`tags:\\s*\\[[^\\]]*"(${tags.join("|")})"`);
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...taggedSuites(tags, path));
    else if (entry.name.endsWith(".test.ts") && tagged.test(readFileSync(path, "utf8")))
      out.push(relative(root, path));
  }
  return out.sort();
}

/** Per engine: the tags whose cases it runs again. */
const TAGS_OF = {
  podman: ["engine", "runtime"],
  runsc: ["runtime"],
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

// --list: which suites each engine would run, and nothing else
if (process.argv.includes("--list")) {
  for (const [name, tags] of Object.entries(TAGS_OF))
    console.log(`${name} (${tags.join(" or ")}): ${taggedSuites(tags).join(" ")}`);
  process.exit(0);
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
  const tags = TAGS_OF[name];
  const suites = taggedSuites(tags);
  if (!suites.length) {
    console.error(`test-engines: ${engine.label}: FAILED: no case is tagged ${tags.join(" or ")}`);
    failed = true;
    continue;
  }
  console.error(
    `test-engines: ${engine.label}: the cases tagged ${tags.join(" or ")} in ${suites.length} suites`,
  );
  const started = Date.now();
  const vitest = join(root, "node_modules/vitest/vitest.mjs");
  const filter = `--tags-filter=${tags.join(" || ")}`;
  const result = spawnSync(process.execPath, [vitest, "run", filter, ...suites], {
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
