import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOX_IMAGE } from "../../runner/boundary/box/layout.ts";
import { TOOLCHAIN_LABEL } from "../../runner/boundary/box/toolchain-image.ts";
import { listRuns } from "../../runner/records/run-records/run-record.ts";
import { RUN_LIMITS, testDocker } from "../support/docker.ts";
import { makeCanonical, sh, writeRepoConnection } from "../support/repos.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * A worker's `[toolchain]` becomes an image of its own, built from the box
 * image with real Debian packages: usable in the worker's next box, reused
 * while nothing changed, rebuilt when the declaration changes, and a package
 * that can't be installed stops everything, named.
 */
const docker = await testDocker();

async function removeToolchainImages(): Promise<void> {
  const images = await docker?.listImages({
    filters: { label: [`${TOOLCHAIN_LABEL}=elf`] },
  });
  for (const image of images ?? [])
    await docker
      ?.getImage(image.Id)
      .remove({ force: true })
      .catch(() => undefined);
}

describe.skipIf(!docker)("declared toolchains", () => {
  let deployment: RosterRoot;
  let workerToml: string;
  let original: string;

  const list = (names: string[]) => `[${names.map((name) => `"${name}"`).join(", ")}]`;
  const declare = (apt: string[], npm: string[] = []) =>
    writeFile(workerToml, `${original}\n[toolchain]\napt = ${list(apt)}\nnpm = ${list(npm)}\n`);
  const exec = async (command: string) => {
    const result = await deployment.roster(["box", "exec", "elf", "--", command], {
      timeoutMs: 240_000,
    });
    return { ...result, envelope: JSON.parse(result.stdout) as Record<string, unknown> };
  };

  beforeAll(async () => {
    await removeToolchainImages();
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    workerToml = join(deployment.paths.config, "workers/elf/worker.toml");
    original = await readFile(workerToml, "utf8");
  });
  afterAll(async () => {
    await deployment?.cleanup();
    await removeToolchainImages();
  });

  it("builds a declared Debian package into the worker's image, then reuses it", {
    tags: ["engine"],
  }, async () => {
    await declare(["sl"]);
    const built = await deployment.roster(["box", "build", "--worker", "elf", "--json"], {
      timeoutMs: 240_000,
    });
    expect(built.code, built.stderr).toBe(0);
    const first = JSON.parse(built.stdout) as { tag: string; built: boolean };
    expect(first).toMatchObject({ built: true, tag: expect.stringMatching(/^roster-box-elf:/) });

    const used = await exec("test -x /usr/games/sl && echo present; id -un");
    expect(used.envelope).toMatchObject({ status: "ok", stdout: "present\nworker\n" });
    expect(used.stderr).not.toContain("toolchain: building");

    const again = await deployment.roster(["box", "build", "--worker", "elf", "--json"]);
    expect(JSON.parse(again.stdout)).toMatchObject({ built: false, tag: first.tag });
  });

  it("rebuilds before the next run when the declaration changes (Debian and npm packages)", async () => {
    await declare(["sl", "figlet"], ["json@11.0.0"]);
    const used = await exec(
      "command -v figlet && test -x /usr/games/sl && echo both; echo '{\"a\":42}' | json a",
    );
    expect(used.envelope, used.stderr).toMatchObject({ status: "ok" });
    expect(used.envelope.stdout).toMatch(/figlet\nboth\n42\n$/);
    expect(used.stderr).toMatch(/toolchain: building roster-box-elf:[0-9a-f]{16} for elf/);
  });

  it("a package that can't be installed fails the build naming it, and nothing starts", async () => {
    await declare(["sl", "roster-no-such-package"]);
    const runs = listRuns(deployment.paths.state, "elf").length;
    const failed = await exec("echo should-not-run");
    expect(failed.code).toBe(2);
    expect(failed.envelope).toMatchObject({ status: "error", exit_code: null, stdout: "" });
    expect(String(failed.envelope.error)).toContain(
      `the toolchain of elf could not be built: apt package "roster-no-such-package" can't be installed; nothing was started`,
    );
    expect(listRuns(deployment.paths.state, "elf")).toHaveLength(runs);
  });

  it("refuses an entry that is not a package name, naming file, line and field", async () => {
    await writeFile(workerToml, `${original}\n[toolchain]\napt = ["sl; curl evil"]\n`);
    const result = await deployment.roster(["validate"]);
    expect(result.code).toBe(2);
    expect(result.stderr + result.stdout).toMatch(/worker\.toml:\d+.*toolchain/);
  });

  it("adds what a mounted project declares in .roster/toolchain.toml on its main", async () => {
    await writeFile(workerToml, original);
    const canonical = makeCanonical({
      ".roster/toolchain.toml": 'apt = ["sl"]\n',
      "README.md": "a project\n",
    });
    await writeRepoConnection(deployment.paths, "project", canonical, "elf");
    const used = await exec("test -x /usr/games/sl && echo from-the-project");
    expect(used.envelope, used.stderr).toMatchObject({
      status: "ok",
      stdout: "from-the-project\n",
    });

    // validate reads it too, and names the repo, branch, file, line and field
    const seed = join(canonical, "..", "seed");
    await writeFile(join(seed, ".roster/toolchain.toml"), '# tools\napt = ["sl"]\nbrew = ["x"]\n');
    sh(seed, ["commit", "-q", "-am", "a key roster doesn't know"]);
    sh(seed, ["push", "-q", canonical, "main"]);
    const result = await deployment.roster(["validate"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain("project:main:.roster/toolchain.toml:3: brew: unknown key");
    const refused = await exec("echo should-not-run");
    expect(refused.code).toBe(2);
    expect(String(refused.envelope.error)).toContain("a project's toolchain is invalid");
  });

  it("installs a Python package from a wheel folder the test makes", async () => {
    // the previous test's project (left with a key roster refuses) is no longer granted
    await rm(join(deployment.paths.config, "connections/project.toml"), { force: true });
    const wheels = await mkdtemp(join(tmpdir(), "roster-wheels-"));
    try {
      // the wheel is made in a box (it has python3), so the host needs nothing but Docker
      execFileSync("docker", [
        "run",
        ...RUN_LIMITS,
        "--rm",
        "--user",
        "0",
        "-v",
        `${wheels}:/out`,
        BOX_IMAGE,
        "python3",
        "-c",
        MAKE_WHEEL,
      ]);
      await writeFile(
        workerToml,
        `${original}\n[toolchain]\npip = ["rosterhello==1.0"]\npip_wheels = "${wheels}"\n`,
      );
      const used = await exec("python3 -c 'import rosterhello; print(rosterhello.GREETING)'");
      expect(used.envelope, used.stderr).toMatchObject({
        status: "ok",
        stdout: "hello from a local wheel\n",
      });
    } finally {
      await rm(wheels, { recursive: true, force: true });
    }
  });
});

/** A minimal pure-Python wheel (rosterhello 1.0), written with zipfile by the box's python3. */
const MAKE_WHEEL = `
import base64, hashlib, zipfile
name, ver = "rosterhello", "1.0"
info = f"{name}-{ver}.dist-info"
files = {
    f"{name}/__init__.py": b'GREETING = "hello from a local wheel"\\n',
    f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {ver}\\n".encode(),
    f"{info}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: roster-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
with zipfile.ZipFile(f"/out/{name}-{ver}-py3-none-any.whl", "w") as wheel:
    for path, data in files.items():
        wheel.writestr(path, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    wheel.writestr(f"{info}/RECORD", "\\n".join(record) + "\\n")
`;
