/**
 * A real Squid (Debian's `squid`) for the door's parent-proxy tests: its own
 * config in a temp dir, listening on a free loopback port, no cache, CONNECT
 * allowed only to the ports a test names, optionally behind basic_ncsa_auth
 * with an htpasswd file made here. Names resolve from its own hosts file, so
 * a test can give Squid an address for a name that the door never sees.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./roster-root.ts";

export const SQUID = "/usr/sbin/squid";
const NCSA = "/usr/lib/squid/basic_ncsa_auth";

export function squidInstalled(): boolean {
  return existsSync(SQUID) && existsSync(NCSA);
}

export class Squid {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly child: ChildProcess,
  ) {}

  static async start(options: {
    /** name → address, Squid's own answers. */
    hosts: Record<string, string>;
    /** The only ports CONNECT may reach. */
    ports: number[];
    /** user → password; when given, every request must authenticate. */
    users?: Record<string, string>;
  }): Promise<Squid> {
    const dir = await mkdtemp(join(tmpdir(), "roster-squid-"));
    // run as root, Squid drops to its own user, which must write its logs here
    await chmod(dir, 0o777);
    const port = await freePort();
    await writeFile(
      join(dir, "hosts"),
      Object.entries(options.hosts)
        .map(([name, address]) => `${address} ${name}\n`)
        .join(""),
      { mode: 0o644 },
    );
    const auth: string[] = [];
    if (options.users) {
      // apr1 hashes, which basic_ncsa_auth reads (openssl comes with ca-certificates)
      const lines = Object.entries(options.users).map(
        ([user, pass]) =>
          `${user}:${execFileSync("openssl", ["passwd", "-apr1", pass], { encoding: "utf8" }).trim()}\n`,
      );
      await writeFile(join(dir, "htpasswd"), lines.join(""), { mode: 0o644 });
      auth.push(
        `auth_param basic program ${NCSA} ${join(dir, "htpasswd")}`,
        "auth_param basic realm roster-test",
        "acl authed proxy_auth REQUIRED",
      );
    }
    const config = [
      `http_port 127.0.0.1:${port}`,
      `pid_filename ${join(dir, "squid.pid")}`,
      `access_log stdio:${join(dir, "access.log")}`,
      `cache_log ${join(dir, "cache.log")}`,
      "cache_store_log none",
      "cache deny all",
      `hosts_file ${join(dir, "hosts")}`,
      "netdb_filename none",
      `coredump_dir ${dir}`,
      "shutdown_lifetime 0 seconds",
      "acl CONNECT method CONNECT",
      `acl test_ports port ${options.ports.join(" ")}`,
      ...auth,
      `http_access allow CONNECT test_ports${options.users ? " authed" : ""}`,
      "http_access deny all",
    ];
    const file = join(dir, "squid.conf");
    await writeFile(file, `${config.join("\n")}\n`, { mode: 0o644 });
    const child = spawn(SQUID, ["-N", "-f", file], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const squid = new Squid(dir, port, child);
    const deadline = Date.now() + 20_000;
    while (!(await answers(port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await squid.stop();
        throw new Error(`squid did not start: ${stderr}${squid.read("cache.log")}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return squid;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Squid's access log: one line per finished transaction (a tunnel's when it closes). */
  accessLog(): string[] {
    return this.read("access.log")
      .split("\n")
      .filter((line) => line.trim() !== "");
  }

  private read(name: string): string {
    const path = join(this.dir, name);
    return existsSync(path) ? readFileSync(path, "utf8") : "";
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGKILL");
      await exited;
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
