import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { connectEngine } from "../../runner/boundary/box/connect.ts";
import { BOX_IMAGE } from "../../runner/boundary/box/layout.ts";
import { runBox } from "../../runner/boundary/box/lifecycle.ts";
import { importTree } from "../../runner/boundary/box/offline-base.ts";
import { silentProgress } from "../../runner/boundary/box/progress.ts";
import { isCI } from "../support/docker.ts";

/**
 * Podman behind the engine seam, against Debian's Podman and its
 * Docker-compatible API (the services box/with-docker.sh starts): roster finds
 * it from the socket, a box can't make namespaces (Podman's own seccomp
 * profile would let it), and a rootless service that can't enforce a box's
 * limits (cgroup v1) gets no box at all. It runs in the Podman pass of
 * scripts/test-engines.mjs (DOCKER_HOST at Podman's socket, the box image
 * loaded into Podman), with the rest of the engine suites; in the Docker pass
 * it says so and waits for that one. Without Podman it fails in CI and skips
 * elsewhere, saying why.
 */
const ROOTFUL = "/run/podman/podman.sock";
const ROOTLESS_USER = "rosteruser";

function rootlessSocket(): string | undefined {
  try {
    const uid = execFileSync("id", ["-u", ROOTLESS_USER], { encoding: "utf8" }).trim();
    const socket = `/run/user/${uid}/podman/podman.sock`;
    return existsSync(socket) ? socket : undefined;
  } catch {
    return undefined;
  }
}

const podmanPass = process.env.DOCKER_HOST === `unix://${ROOTFUL}`;
const podman = existsSync(ROOTFUL);
if (!podmanPass)
  console.warn("the Podman tests run in the Podman pass (scripts/test-engines.mjs), not this one");
else if (!podman && !isCI)
  console.warn(`skipping Podman tests: no Podman API socket at ${ROOTFUL} (box/with-docker.sh)`);

describe.skipIf(!podmanPass || (!podman && !isCI))("Podman", { tags: ["engine"] }, () => {
  const env = { ...process.env, DOCKER_HOST: `unix://${ROOTFUL}` };

  it("is found from its socket and named with its runtime", async () => {
    const engine = await connectEngine({ env });
    expect(engine.kind).toBe("podman");
    expect(await engine.version()).toMatch(/^Podman \d+\.\d+\.\d+, runc$/);
  });

  it("gives a box no namespaces of its own, though Podman's profile would", async () => {
    const engine = await connectEngine({ env });
    if (!(await engine.image(BOX_IMAGE)))
      throw new Error(`Podman has no ${BOX_IMAGE}: scripts/test-engines.mjs loads it`);
    let said = "";
    const outcome = await runBox(
      engine,
      {
        image: BOX_IMAGE,
        cmd: [
          "sh",
          "-c",
          "unshare -r true && echo USERNS; unshare -rm true && echo MOUNTNS; echo forked $(sh -c 'echo ok')",
        ],
      },
      { onStdout: (chunk) => (said += chunk), onStderr: (chunk) => (said += chunk) },
    );
    expect(outcome.exitCode).toBe(0);
    expect(said).toContain("forked ok");
    expect(said).not.toContain("USERNS");
    expect(said).not.toContain("MOUNTNS");
    expect(said).toMatch(/unshare failed/);
  });

  it("imports a root file system as a base the way the offline build does, its ENV applied", async () => {
    const engine = await connectEngine({ env });
    // the smallest tree that runs something: dash and the libraries it loads
    const rootfs = await mkdtemp(join(tmpdir(), "roster-podman-rootfs-"));
    const name = `roster-test-import-${Math.random().toString(36).slice(2, 8)}:base`;
    try {
      const libraries = execFileSync("ldd", ["/bin/dash"], { encoding: "utf8" })
        .split("\n")
        .map((line) => line.match(/(\/\S+)\s+\(0x/)?.[1])
        .filter((path): path is string => path !== undefined);
      expect(libraries.length).toBeGreaterThan(0);
      for (const file of ["/bin/dash", ...libraries]) {
        await mkdir(join(rootfs, dirname(file)), { recursive: true });
        await copyFile(file, join(rootfs, file));
      }
      await chmod(join(rootfs, "bin/dash"), 0o755);
      await importTree(engine, rootfs, silentProgress, name);
      // found under the short name roster gave it, not Podman's localhost/ one
      expect(await engine.image(name)).toBeDefined();
      let said = "";
      const outcome = await runBox(
        engine,
        { image: name, cmd: ["/bin/dash", "-c", 'echo "lang=$LANG"'] },
        { onStdout: (chunk) => (said += chunk), onStderr: (chunk) => (said += chunk) },
      );
      expect(outcome.exitCode, said).toBe(0);
      expect(said).toContain("lang=C.UTF-8");
    } finally {
      await rm(rootfs, { recursive: true, force: true });
      await engine.removeImage(name).catch(() => undefined);
    }
  });

  it("refuses a rootless service that can't enforce a box's limits, before any box exists", async () => {
    const socket = rootlessSocket();
    if (!socket)
      throw new Error(
        `no rootless Podman service for ${ROOTLESS_USER} (box/with-docker.sh starts one)`,
      );
    const cgroup = execFileSync("stat", ["-fc", "%T", "/sys/fs/cgroup"], {
      encoding: "utf8",
    }).trim();
    const engine = await connectEngine({
      env: { ...process.env, DOCKER_HOST: `unix://${socket}` },
    });
    expect(engine.kind).toBe("podman");
    const name = `roster-rootless-${Math.random().toString(36).slice(2, 10)}`;
    const attempt = runBox(engine, { image: BOX_IMAGE, cmd: ["true"], name });
    if (cgroup === "cgroup2fs") {
      // cgroup v2 can enforce them for a delegated user: the box runs (keep-id)
      await expect(attempt).resolves.toMatchObject({ exitCode: 0 });
      return;
    }
    await expect(attempt).rejects.toThrow(
      /rootless Podman on cgroup v1 can't enforce a box's memory/,
    );
    const named = execFileSync(
      "su",
      [
        ROOTLESS_USER,
        "-s",
        "/bin/sh",
        "-c",
        `XDG_RUNTIME_DIR=${socket.replace(/\/podman\/podman\.sock$/, "")} podman ps -a --filter name=${name} -q`,
      ],
      { encoding: "utf8" },
    );
    expect(named.trim()).toBe("");
  });
});
