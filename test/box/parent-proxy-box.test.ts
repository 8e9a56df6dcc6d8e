import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOX_CA, BOX_CA_BUNDLE, boxEnvironment } from "../../runner/boundary/box/box-env.ts";
import { DOOR_PORT } from "../../runner/boundary/box/layout.ts";
import { makeHome, type TestHome } from "../support/box-home.ts";
import { isCI, testDocker, testEngine } from "../support/docker.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { startGitServer } from "../support/git-server.ts";
import { runInBox } from "../support/pi-box.ts";
import { Squid, squidInstalled } from "../support/squid.ts";
import { Upstream } from "../support/upstream.ts";

const docker = await testDocker();
const engine = (await testEngine()) as NonNullable<Awaited<ReturnType<typeof testEngine>>>;
const installed = squidInstalled();

/**
 * A real box behind a door behind a company proxy (a real Squid): git clone,
 * npm install and an API call with an injected credential work from inside the box, each
 * through Squid. The door's own answer for both names is 127.0.0.9, where
 * a listener counts anyone who comes; only Squid knows where they really are.
 */
describe.skipIf(!docker || (!installed && !isCI))("a box behind the door behind Squid", () => {
  let env: GatewayEnv;
  let api: Upstream;
  let git: Upstream;
  let npm: Upstream;
  let squid: Squid;
  let decoys: Server[] = [];
  const decoyPeers: string[] = [];
  let work: string;
  let home: TestHome;

  beforeAll(async () => {
    if (!installed) throw new Error("squid is not installed (box/with-docker.sh installs it)");
    work = await mkdtemp(join(tmpdir(), "roster-proxybox-"));
    execFileSync("git", ["init", "-q", "--bare", join(work, "repos/demo.git")]);
    execFileSync("git", ["init", "-q", join(work, "src")]);
    await writeFile(join(work, "src/README.md"), "cloned through the company proxy\n");
    const gitEnv = {
      ...process.env,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@t",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@t",
    };
    const inSrc = (...args: string[]) =>
      execFileSync("git", ["-C", join(work, "src"), ...args], { env: gitEnv });
    inSrc("add", ".");
    inSrc("commit", "-qm", "first");
    inSrc("push", "-q", join(work, "repos/demo.git"), "HEAD:refs/heads/main");
    execFileSync("git", [
      "-C",
      join(work, "repos/demo.git"),
      "symbolic-ref",
      "HEAD",
      "refs/heads/main",
    ]);
    api = await Upstream.start({ tls: true, names: ["api.test"] });
    // a one-package npm registry: its packument and its tarball
    await writeFile(
      join(work, "package.json"),
      JSON.stringify({ name: "demo-pkg", version: "1.0.0", main: "index.js" }),
    );
    execFileSync("mkdir", ["-p", join(work, "pkg/package")]);
    execFileSync("cp", [join(work, "package.json"), join(work, "pkg/package/package.json")]);
    await writeFile(join(work, "pkg/package/index.js"), 'module.exports = "from the registry";\n');
    execFileSync("tar", [
      "-czf",
      join(work, "demo-pkg-1.0.0.tgz"),
      "-C",
      join(work, "pkg"),
      "package",
    ]);
    const tarball = readFileSync(join(work, "demo-pkg-1.0.0.tgz"));
    const integrity = `sha512-${createHash("sha512").update(tarball).digest("base64")}`;
    npm = await Upstream.start({
      tls: true,
      names: ["npm.test"],
      handler: (req, res) => {
        const base = `https://npm.test:${npm.port}`;
        if (req.url === "/demo-pkg") {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              name: "demo-pkg",
              "dist-tags": { latest: "1.0.0" },
              versions: {
                "1.0.0": {
                  name: "demo-pkg",
                  version: "1.0.0",
                  dist: { tarball: `${base}/demo-pkg/-/demo-pkg-1.0.0.tgz`, integrity },
                },
              },
            }),
          );
        } else if (req.url === "/demo-pkg/-/demo-pkg-1.0.0.tgz") {
          res.writeHead(200, { "content-type": "application/octet-stream" });
          res.end(tarball);
        } else {
          res.writeHead(404);
          res.end();
        }
      },
    });
    git = await startGitServer(join(work, "repos"), ["git.test"]);
    for (const upstream of [api, git, npm]) {
      const decoy = createServer((socket) => {
        decoyPeers.push(String(socket.remoteAddress));
        socket.destroy();
      });
      await new Promise<void>((resolve) => decoy.listen(upstream.port, "127.0.0.9", resolve));
      decoys.push(decoy);
    }
    squid = await Squid.start({
      hosts: { "api.test": "127.0.0.1", "git.test": "127.0.0.1", "npm.test": "127.0.0.1" },
      ports: [api.port, git.port, npm.port],
      users: { alice: "s3cret" },
    });
    await writeFile(
      join(work, "ca.pem"),
      `${api.certificate?.caPem}\n${git.certificate?.caPem}\n${npm.certificate?.caPem}`,
    );
    env = await startGatewayEnv(
      `
[gateway]
upstream_proxy = "${squid.url}"
upstream_proxy_auth = "corp-proxy"
upstream_ca = ["${join(work, "ca.pem")}"]
resolve = { "api.test" = "127.0.0.9", "git.test" = "127.0.0.9", "npm.test" = "127.0.0.9" }

[[grant]]
name = "api"
verdict = "allow"
match = { host = "api.test" }
inject = { credential = "apikey", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "registry"
verdict = "allow"
match = { host = "npm.test", method = "GET" }

[[grant]]
name = "forge"
verdict = "allow"
match = { host = "git.test" }
`,
      { door: true },
    );
    await env.writeVault("apikey", { token: "tok-box" });
    await env.writeVault("corp-proxy", { user: "alice", pass: "s3cret" });
    home = await makeHome();
  }, 120_000);

  afterAll(async () => {
    await env?.cleanup();
    await squid?.stop();
    for (const decoy of decoys) await new Promise((resolve) => decoy.close(resolve));
    decoys = [];
    await Promise.all([api?.stop(), git?.stop(), npm?.stop()]);
    await home?.cleanup();
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function inBox(script: string) {
    const token = await env.token("elf", "run-proxied");
    return runInBox(engine, ["bash", "-c", script], {
      home: home.dir,
      ...(env.gateway.door ? { door: env.gateway.door } : {}),
      env: boxEnvironment({
        token,
        gatewayHost: "127.0.0.1",
        gatewayPort: DOOR_PORT,
        runId: "run-proxied",
      }),
      mounts: [
        { source: join(env.paths.ca, "ca.crt"), target: BOX_CA, readOnly: true },
        { source: join(env.paths.ca, "bundle.crt"), target: BOX_CA_BUNDLE, readOnly: true },
      ],
    });
  }

  it("git clone, npm install and an API call with an injected credential go through Squid", async () => {
    const run = await inBox(
      [
        `git clone -q https://git.test:${git.port}/demo.git /tmp/demo && cat /tmp/demo/README.md`,
        `curl -sS https://api.test:${api.port}/from-box`,
        `mkdir -p /tmp/proj && cd /tmp/proj && npm install --no-audit --no-fund --loglevel=error --registry https://npm.test:${npm.port}/ demo-pkg >/dev/null && node -p 'require("demo-pkg")'`,
      ].join(" && "),
    );
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain("cloned through the company proxy");
    expect(run.stdout).toContain('"url":"/from-box"');
    expect(run.stdout).toContain("from the registry");
    expect(api.seen.find((request) => request.url === "/from-box")?.headers.authorization).toBe(
      "Bearer tok-box",
    );
    // every tunnel is logged by Squid when it closes: the door's pools close with the gateway
    await env.gateway.stop();
    const deadline = Date.now() + 10_000;
    const logged = () => squid.accessLog().join("\n");
    while (
      !(
        logged().includes(`CONNECT git.test:${git.port}`) &&
        logged().includes(`CONNECT api.test:${api.port}`)
      ) &&
      Date.now() < deadline
    )
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(logged()).toContain(`CONNECT git.test:${git.port}`);
    expect(logged()).toContain(`CONNECT api.test:${api.port}`);
    expect(logged()).toContain(`CONNECT npm.test:${npm.port}`);
    expect(logged()).toContain("alice");
    expect(decoyPeers).toEqual([]);
  }, 180_000);
});
