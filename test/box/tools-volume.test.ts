import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOOLCHAIN_LABEL } from "../../runner/boundary/box/toolchain-image.ts";
import { deploymentKey, TOOLS_LABELS } from "../../runner/boundary/box/tools-volume.ts";
import { testDocker } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * A worker's toolchain volume (/opt/tools): what one run installs, the next
 * finds; a new image gets a new volume, never an old one; two boxes share it;
 * prune removes the stale pair and never what a running box holds.
 */
const docker = await testDocker();

describe.skipIf(!docker)("the toolchain volume", () => {
  let deployment: RosterRoot;
  let workerToml: string;
  let original: string;

  const volumes = async () =>
    (
      await docker?.listVolumes({
        filters: {
          label: [`${TOOLS_LABELS.deployment}=${deploymentKey(deployment.paths.config)}`],
        },
      })
    )?.Volumes?.map((volume) => volume.Name) ?? [];
  const exec = async (command: string) => {
    const result = await deployment.roster(["box", "exec", "elf", "--", command], {
      timeoutMs: 240_000,
    });
    return JSON.parse(result.stdout) as { status: string; stdout: string; stderr: string };
  };

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    workerToml = join(deployment.paths.config, "workers/elf/worker.toml");
    original = await readFile(workerToml, "utf8");
  });
  afterAll(async () => {
    for (const name of await volumes().catch(() => []))
      await docker
        ?.getVolume(name)
        .remove()
        .catch(() => undefined);
    for (const image of (await docker?.listImages({
      filters: { label: [`${TOOLCHAIN_LABEL}=elf`] },
    })) ?? [])
      await docker
        ?.getImage(image.Id)
        .remove({ force: true })
        .catch(() => undefined);
    await deployment?.cleanup();
  });

  it("keeps what a run installs for the next run of the worker", { tags: ["engine"] }, async () => {
    const first = await exec(
      "npm config get prefix; echo kept > /opt/tools/marker; mkdir -p /opt/tools/npm/bin && printf '#!/bin/sh\\necho tool-ran\\n' > /opt/tools/npm/bin/mytool && chmod +x /opt/tools/npm/bin/mytool",
    );
    expect(first).toMatchObject({ status: "ok", stdout: "/opt/tools/npm\n" });
    const next = await exec("cat /opt/tools/marker; mytool");
    expect(next).toMatchObject({ status: "ok", stdout: "kept\ntool-ran\n" });
    expect(await volumes()).toHaveLength(1);
  });

  it("two boxes of the worker use it at once", async () => {
    // one gateway for both (two embedded ones would want the same port)
    const gateway = deployment.spawnRoster(["gateway", "start"]);
    try {
      for (let i = 0; i < 100 && !existsSync(join(deployment.paths.state, "gateway.json")); i++)
        await new Promise((resolve) => setTimeout(resolve, 100));
      const both = await Promise.all([
        exec("roster-lock tools -- sh -c 'echo a >> /opt/tools/log'; cat /opt/tools/marker"),
        exec("roster-lock tools -- sh -c 'echo b >> /opt/tools/log'; cat /opt/tools/marker"),
      ]);
      for (const result of both) expect(result).toMatchObject({ status: "ok", stdout: "kept\n" });
    } finally {
      gateway.kill("SIGTERM");
      await new Promise((resolve) => gateway.once("exit", resolve));
    }
    const log = await exec("sort /opt/tools/log");
    expect(log.stdout).toBe("a\nb\n");
  });

  it("a new image gets a new volume, and prune removes the stale one but not a running box's", {
    tags: ["engine"],
  }, async () => {
    const [old] = await volumes();
    await writeFile(workerToml, `${original}\n[toolchain]\napt = ["sl"]\n`);
    const fresh = await exec("test -e /opt/tools/marker && echo old || echo fresh");
    expect(fresh).toMatchObject({ status: "ok", stdout: "fresh\n" });
    expect(await volumes()).toHaveLength(2);

    // a box still running on the new image holds its volume; the old one is free
    // it runs until the test lets it go (a file in its store), however slow the engine is
    const release = join(deployment.paths.data, "workers/elf/store/release");
    const long = deployment.spawnRoster([
      "box",
      "exec",
      "elf",
      "--",
      "for i in $(seq 1200); do test -e ~/store/release && exit 0; sleep 0.1; done",
    ]);
    // this deployment's box (other deployments' elf boxes may run beside it): one that mounts its volume
    const ours = await volumes();
    let holding = false;
    for (let i = 0; i < 600 && !holding; i++) {
      const running = await docker?.listContainers({
        filters: { label: ["roster.worker=elf"] },
      });
      holding = Boolean(
        running?.some((box) => box.Mounts.some((mount) => ours.includes(mount.Name ?? ""))),
      );
      if (!holding) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(holding, "a running box mounting the new volume").toBe(true);
    // the declaration goes back: the box image's volume (old) is current again, the sl one is stale
    await writeFile(workerToml, original);
    const pruned = await deployment.roster(["box", "prune", "--json"]);
    expect(pruned.code, pruned.stderr).toBe(0);
    const report = JSON.parse(pruned.stdout) as {
      removed: { kind: string; name: string }[];
      kept: { kind: string; name: string; why: string }[];
    };
    const current = await volumes();
    expect(current).toContain(old);
    expect(report.kept.map((item) => `${item.kind} ${item.why}`)).toEqual(
      expect.arrayContaining(["volume in use by a box"]),
    );
    await writeFile(release, "");
    await new Promise((resolve) => long.once("exit", resolve));
    const again = JSON.parse((await deployment.roster(["box", "prune", "--json"])).stdout) as {
      removed: { kind: string; name: string }[];
    };
    // both reports in the message: which prune took (or kept) what
    expect(
      again.removed.map((item) => item.kind).sort(),
      JSON.stringify({ first: report, again }),
    ).toEqual(["image", "volume"]);
    expect(await volumes()).toEqual([old]);
  });
});
