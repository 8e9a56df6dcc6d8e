import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOX_CA, BOX_CA_BUNDLE, boxEnvironment } from "../../runner/boundary/box/box-env.ts";
import { DOOR_PORT } from "../../runner/boundary/box/layout.ts";
import { makeHome, type TestHome } from "../support/box-home.ts";
import { testDocker, testEngine } from "../support/docker.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { startGitServer } from "../support/git-server.ts";
import { runInBox } from "../support/pi-box.ts";
import { Upstream } from "../support/upstream.ts";

const docker = await testDocker();
const engine = (await testEngine()) as NonNullable<Awaited<ReturnType<typeof testEngine>>>;

/** A minimal but valid wheel, so pip's resolver can read its metadata. */
function buildWheel(dir: string): string {
  const name = "demo_pkg-0.1.0-py3-none-any.whl";
  execFileSync("python3", [
    "-c",
    `import zipfile,sys
z=zipfile.ZipFile(sys.argv[1],'w')
z.writestr('demo_pkg/__init__.py','VALUE=1\\n')
z.writestr('demo_pkg-0.1.0.dist-info/METADATA','Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 0.1.0\\n')
z.writestr('demo_pkg-0.1.0.dist-info/WHEEL','Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')
z.writestr('demo_pkg-0.1.0.dist-info/RECORD','')
z.close()`,
    join(dir, name),
  ]);
  return name;
}

describe.skipIf(!docker)(
  "clients inside a real box reach the world only through the gateway",
  () => {
    let env: GatewayEnv;
    let api: Upstream;
    let git: Upstream;
    let pypi: Upstream;
    let work: string;
    let home: TestHome;
    let wheel: Buffer;
    let wheelName: string;

    beforeAll(async () => {
      work = await mkdtemp(join(tmpdir(), "roster-gwbox-"));

      execFileSync("git", ["init", "-q", "--bare", join(work, "repos/demo.git")]);
      execFileSync("git", ["init", "-q", join(work, "src")]);
      await writeFile(join(work, "src/README.md"), "hello from a real git server\n");
      const gitEnv = {
        ...process.env,
        GIT_AUTHOR_NAME: "t",
        GIT_AUTHOR_EMAIL: "t@t",
        GIT_COMMITTER_NAME: "t",
        GIT_COMMITTER_EMAIL: "t@t",
      };
      execFileSync("git", ["-C", join(work, "src"), "add", "."], { env: gitEnv });
      execFileSync("git", ["-C", join(work, "src"), "commit", "-qm", "first"], { env: gitEnv });
      execFileSync(
        "git",
        [
          "-C",
          join(work, "src"),
          "push",
          "-q",
          join(work, "repos/demo.git"),
          "HEAD:refs/heads/main",
        ],
        { env: gitEnv },
      );
      execFileSync("git", [
        "-C",
        join(work, "repos/demo.git"),
        "symbolic-ref",
        "HEAD",
        "refs/heads/main",
      ]);

      wheelName = buildWheel(work);
      wheel = await readFile(join(work, wheelName));
      api = await Upstream.start({ tls: true, names: ["api.test"] });
      git = await startGitServer(join(work, "repos"), ["git.test"]);
      pypi = await Upstream.start({
        tls: true,
        names: ["pypi.test"],
        handler: (req, res) => {
          if (req.url?.startsWith("/simple/demo-pkg")) {
            res.writeHead(200, { "content-type": "text/html" });
            res.end(`<html><body><a href="/files/${wheelName}">${wheelName}</a></body></html>`);
          } else if (req.url === `/files/${wheelName}`) {
            res.writeHead(200, { "content-type": "application/octet-stream" });
            res.end(wheel);
          } else {
            res.writeHead(404);
            res.end();
          }
        },
      });
      for (const [name, upstream] of [
        ["api", api],
        ["git", git],
        ["pypi", pypi],
      ] as const) {
        await writeFile(join(work, `${name}-ca.pem`), upstream.certificate?.caPem ?? "");
      }
      env = await startGatewayEnv(
        `
[gateway]
upstream_ca = ["${join(work, "api-ca.pem")}", "${join(work, "git-ca.pem")}", "${join(work, "pypi-ca.pem")}"]
resolve = { "api.test" = "127.0.0.1", "git.test" = "127.0.0.1", "pypi.test" = "127.0.0.1" }

[[grant]]
name = "api"
verdict = "allow"
match = { host = "api.test" }

[[grant]]
name = "forge"
verdict = "allow"
match = { host = "git.test" }

[[grant]]
name = "packages"
verdict = "allow"
match = { host = "pypi.test", method = "GET" }
`,
        { door: true },
      );
      home = await makeHome();
    });

    afterAll(async () => {
      await env?.cleanup();
      await Promise.all([api?.stop(), git?.stop(), pypi?.stop()]);
      await home?.cleanup();
      if (work) await rm(work, { recursive: true, force: true });
    });

    async function inBox(script: string) {
      const token = await env.token("elf", "run-clients");
      return runInBox(engine, ["bash", "-c", script], {
        home: home.dir,
        ...(env.gateway.door ? { door: env.gateway.door } : {}),
        env: boxEnvironment({
          token,
          gatewayHost: "127.0.0.1",
          gatewayPort: DOOR_PORT,
          runId: "run-clients",
        }),
        mounts: [
          { source: join(env.paths.ca, "ca.crt"), target: BOX_CA, readOnly: true },
          { source: join(env.paths.ca, "bundle.crt"), target: BOX_CA_BUNDLE, readOnly: true },
        ],
      });
    }

    it("curl: an allowed host answers, a denied one gets the legible 403", async () => {
      const run = await inBox(
        `curl -sS https://api.test:${api.port}/from-curl; echo; curl -sS -w '%{http_code}' https://denied.test:${api.port}/x`,
      );
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.stdout).toContain('"url":"/from-curl"');
      expect(run.stdout).toContain('"error":"denied by gateway (deny)"');
      expect(run.stdout.trim().endsWith("403")).toBe(true);
    });

    it("git clones over smart HTTP through interception", async () => {
      const run = await inBox(
        `git clone -q https://git.test:${git.port}/demo.git /tmp/demo && cat /tmp/demo/README.md`,
      );
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.stdout).toContain("hello from a real git server");
    });

    it("Python urllib and pip download work; a denied host raises a 403", async () => {
      const run = await inBox(
        [
          `python3 -c "import urllib.request; print(urllib.request.urlopen('https://api.test:${api.port}/from-python').read().decode())"`,
          `pip download -q --no-deps --index-url https://pypi.test:${pypi.port}/simple/ -d /tmp/wheels demo-pkg && ls /tmp/wheels`,
          `python3 -c "
import urllib.request, urllib.error
try:
    urllib.request.urlopen('https://denied.test:${api.port}/')
except urllib.error.HTTPError as e:
    print('refused', e.code, e.headers['x-roster-verdict'])
"`,
        ].join(" && "),
      );
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.stdout).toContain('"url":"/from-python"');
      expect(run.stdout).toContain(wheelName);
      expect(run.stdout).toContain("refused 403 deny");
    });

    it("Node's fetch goes through the proxy; a POST the grant doesn't allow is refused by method", async () => {
      const run = await inBox(
        `node -e "
(async () => {
  const ok = await fetch('https://api.test:${api.port}/from-node');
  console.log(ok.status, await ok.text());
  const no = await fetch('https://pypi.test:${pypi.port}/simple/', { method: 'POST', body: 'x' });
  console.log(no.status, (await no.json()).hint);
})()"`,
      );
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.stdout).toContain('200 {"method":"GET","url":"/from-node"');
      expect(run.stdout).toContain(
        '403 POST pypi.test is blocked by method, not host: "packages" allows GET',
      );
    });
  },
);
