import { join } from "node:path";
import type Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { listExtensions } from "../../runner/boundary/box/build-context.ts";
import { buildBoxImage } from "../../runner/boundary/box/image-build.ts";
import { BOX_IMAGE, LABELS, OFFLINE_BASE } from "../../runner/boundary/box/layout.ts";
import { silentProgress } from "../../runner/boundary/box/progress.ts";
import { RosterError } from "../../runner/ground/errors.ts";
import { ENGINE_PIN, PROJECT_ROOT } from "../../runner/ground/version.ts";
import { makeHome } from "../support/box-home.ts";
import { testDocker, testEngine } from "../support/docker.ts";
import { runInBox } from "../support/pi-box.ts";

const docker = await testDocker();
const engine = (await testEngine()) as NonNullable<Awaited<ReturnType<typeof testEngine>>>;

/** Runs a command as root in a plain (unhardened) container, only to inspect the image. */
async function inspectAsRoot(client: Docker, image: string, script: string): Promise<string> {
  const chunks: Buffer[] = [];
  const container = await client.createContainer({
    Image: image,
    Cmd: ["bash", "-c", script],
    User: "0",
    Tty: true,
    HostConfig: { NetworkMode: "none" },
  });
  try {
    const stream = await container.attach({ stream: true, stdout: true, stderr: true });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    await container.start();
    await container.wait();
    return Buffer.concat(chunks).toString("utf8");
  } finally {
    await container.remove({ force: true });
  }
}

describe.skipIf(!docker)("the box image", () => {
  const client = docker as NonNullable<typeof docker>;

  it("bakes the pinned engine and exactly the top-level extensions", async () => {
    const info = await client.getImage(BOX_IMAGE).inspect();
    const labels = info.Config?.Labels ?? {};
    expect(labels[LABELS.engineVersion]).toBe(ENGINE_PIN);
    const expected = await listExtensions(join(PROJECT_ROOT, "extensions"));
    expect(labels[LABELS.extensions] ?? "").toBe(expected.join(","));
    expect(info.Config?.User).toBe("worker");
  });

  it("has no file with a setuid or setgid bit", async () => {
    const found = await inspectAsRoot(
      client,
      BOX_IMAGE,
      "find / -xdev -type f \\( -perm -4000 -o -perm -2000 \\) -print; echo scanned",
    );
    expect(found.trim()).toBe("scanned");
  });

  it("carries the toolbelt", async () => {
    const out = await inspectAsRoot(
      client,
      BOX_IMAGE,
      "for t in git curl jq python3 rg fd make gcc pdftotext sqlite3 rsync node npm roster-lock roster-busy flock chromium-headless-shell certutil; do command -v $t >/dev/null && echo have:$t || echo missing:$t; done",
    );
    expect(out).not.toContain("missing:");
  });

  it("runs the seed's toolbelt in a real box, offline, each tool answering", async () => {
    const home = await makeHome();
    // each tool's --version (or what stands for it), run as the box runs: the
    // box user, a read-only root, no network; pnpm and yarn come from corepack's
    // cache baked at build time, so they answer with nothing to download
    const probes: Array<[string, string, RegExp]> = [
      ["gh", "gh --version", /^gh version \d+\.\d+/m],
      ["yq", "yq --version", /^yq \d+\.\d+/m],
      ["pandoc", "pandoc --version", /^pandoc \d+\.\d+/m],
      ["imagemagick", "convert -version", /^Version: ImageMagick \d/m],
      ["ffmpeg", "ffmpeg -version", /^ffmpeg version \S+/m],
      ["zstd", "zstd --version", /Zstandard CLI.*v\d+\.\d+/],
      ["moreutils", "echo soaked | sponge /tmp/sponged && cat /tmp/sponged", /^soaked$/m],
      ["tzdata", "TZ=Asia/Tokyo date +%z", /^\+0900$/m],
      ["pnpm", "pnpm --version", /^10\.\d+\.\d+$/m],
      ["yarn", "yarn --version", /^1\.22\.\d+$/m],
    ];
    try {
      // one box for all of them, each probe in a subshell of its own between markers
      const script = probes
        .map(
          ([tool, command]) => `echo "@@ ${tool}"; ( ${command} ) 2>&1; echo "@@ ${tool} exit=$?"`,
        )
        .join("\n");
      const run = await runInBox(engine, ["bash", "-c", script], { home: home.dir });
      expect(run.exitCode, run.stderr).toBe(0);
      for (const [tool, , answer] of probes) {
        const found = new RegExp(`^@@ ${tool}\\n([\\s\\S]*?)^@@ ${tool} exit=(\\d+)$`, "m").exec(
          run.stdout,
        );
        expect({ tool, exitCode: Number(found?.[2]), out: found?.[1] }).toEqual({
          tool,
          exitCode: 0,
          out: expect.stringMatching(answer),
        });
      }
    } finally {
      await home.cleanup();
    }
  });

  it("names the failing step and keeps the previous images when the base can't be built", async () => {
    const before = await client.getImage(BOX_IMAGE).inspect();
    const baseBefore = (await engine.image(OFFLINE_BASE))
      ? (await client.getImage(OFFLINE_BASE).inspect()).Id
      : undefined;
    const attempt = buildBoxImage({
      engine,
      progress: silentProgress,
      rebuildBase: true,
      // a mirror nobody answers on
      env: { ...process.env, ROSTER_DEBIAN_MIRROR: "http://127.0.0.1:9/debian" },
    });
    await expect(attempt).rejects.toThrow(RosterError);
    await expect(attempt).rejects.toThrow(/failed at step "debootstrap".*previous image is kept/);
    expect((await client.getImage(BOX_IMAGE).inspect()).Id).toBe(before.Id);
    if (baseBefore) expect((await client.getImage(OFFLINE_BASE).inspect()).Id).toBe(baseBefore);
  });
});
