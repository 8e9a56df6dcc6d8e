import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { storeCredential } from "../../runner/work/runs/credentials.ts";
import { makeRosterRoot, type RosterRoot } from "./roster-root.ts";
import { Upstream } from "./upstream.ts";

/**
 * A deployment made by `roster init` whose worker elf runs another agent
 * (Claude Code, Codex) against a provider stand-in, with the provider's real
 * key in the vault, one web page the door lets it read (https://docs.test,
 * served here), and message_user held for the desk. Not a double of anything
 * of ours: the config is the example's, edited as an operator would.
 */
export const DOOR_PAGE = `<!doctype html><html><head><title>The door</title></head><body><article>
<h1>The door</h1><p>Every request a box makes is judged at the door, and the key is added there.</p>
</article></body></html>`;

export interface AgentDeployment {
  deployment: RosterRoot;
  /** The page's URL, as the box asks for it. */
  pageUrl: string;
  stop(): Promise<void>;
}

export async function agentDeployment(options: {
  agent: "claude" | "codex";
  provider: "anthropic" | "openai";
  model: string;
  baseUrl: string;
  /** The provider's real key, stored in the vault under the provider's name. */
  key: string;
  /** Appended to org.toml. */
  extraOrg?: string;
}): Promise<AgentDeployment> {
  const docs = await Upstream.start({
    tls: true,
    names: ["docs.test"],
    handler: (_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(DOOR_PAGE);
    },
  });
  const deployment = await makeRosterRoot("http://127.0.0.1:1/v1");
  const caFile = join(deployment.root, "docs-ca.pem");
  await writeFile(caFile, docs.certificate?.caPem ?? "");
  const orgFile = join(deployment.paths.config, "org.toml");
  const org = (await readFile(orgFile, "utf8"))
    .replace(
      /^\[model\][\s\S]*?\n\[engine\]/m,
      `[model]\nprovider = "${options.provider}"\nmodel = "${options.model}"\nbase_url = "${options.baseUrl}"\n\n[engine]`,
    )
    // before the example's web-read, which keeps names that resolve to loopback out
    .replace(
      '[[grant]]\nname = "web-read"',
      '[[grant]]\nname = "docs"\nverdict = "allow"\nmatch = { host = "docs.test", method = "GET" }\n\n[[grant]]\nname = "web-read"',
    )
    .replace(
      /\[gateway\]\n/,
      `[gateway]\nupstream_ca = ${JSON.stringify([caFile])}\nresolve = { "docs.test" = "127.0.0.1" }\n`,
    );
  await writeFile(
    orgFile,
    `${org}\n[[action]]\nname = "message-user"\nexecutor = "message-user"\ntrust = "gate"\n${options.extraOrg ?? ""}`,
  );
  await storeCredential(deployment.paths.vault, options.provider, { key: options.key });
  const workerFile = join(deployment.paths.config, "workers", "elf", "worker.toml");
  const worker = await readFile(workerFile, "utf8");
  await writeFile(
    workerFile,
    worker.replace(/^name = "elf"$/m, `name = "elf"\nagent = "${options.agent}"`),
  );
  return {
    deployment,
    pageUrl: `https://docs.test:${docs.port}/door`,
    stop: async () => {
      await docs.stop();
      await deployment.cleanup();
    },
  };
}

/**
 * A shell command that prints `from-shell`, then how many of the box's
 * environment variables hold `key`, then how many files under its $HOME and
 * /tmp do: "from-shell\n0\n0" in a box that never held it. The key is put
 * together in the shell, so the command itself (which an agent keeps in its
 * transcript under $HOME) does not hold it.
 */
export function keySearch(key: string): string {
  const half = Math.floor(key.length / 2);
  return `echo from-shell; k='${key.slice(0, half)}'; k="\${k}${key.slice(half)}"; env | grep -c "$k"; grep -rlsF "$k" ~ /tmp 2>/dev/null | wc -l`;
}
