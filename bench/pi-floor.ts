/**
 * The floor a governed run is measured against: pi itself in a hardened
 * `docker run` of the box image, talking to the scripted model straight (no
 * gateway, no roster). Shared by bench/run-latency.ts and bench/engine-start.ts.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SENTINEL } from "../runner/boundary/box/box-env.ts";
import { RUN_PI } from "../runner/boundary/box/layout.ts";
import { piAgentConfig } from "../runner/ground/config/model.ts";

export interface PiFloor {
  /** `docker run …` argv; `extra` goes before the image, `prefix` before run-pi. */
  argv(image: string, extra?: string[], prefix?: string[]): string[];
  cleanup(): void;
}

export function piFloor(modelPort: number): PiFloor {
  const home = mkdtempSync(join(tmpdir(), "roster-bench-home-"));
  mkdirSync(join(home, "agent"), { recursive: true });
  const agent = piAgentConfig(
    {
      provider: "openai-compatible",
      model: "scripted-1",
      base_url: `http://host.docker.internal:${modelPort}/v1`,
    },
    SENTINEL,
  );
  writeFileSync(join(home, "agent/models.json"), JSON.stringify(agent.models));
  writeFileSync(join(home, "agent/settings.json"), JSON.stringify(agent.settings));
  execFileSync("chown", ["-R", "1000:1000", home]);
  return {
    argv: (image, extra = [], prefix = []) => [
      "docker",
      "run",
      "--rm",
      "--read-only",
      "--cap-drop",
      "ALL",
      "--security-opt",
      "no-new-privileges",
      "--user",
      "1000:1000",
      "--tmpfs",
      "/tmp:rw,exec,mode=1777",
      "--add-host",
      "host.docker.internal:host-gateway",
      "-v",
      `${home}:/home/worker`,
      "-e",
      "PI_CODING_AGENT_DIR=/home/worker/agent",
      ...extra,
      image,
      ...prefix,
      RUN_PI,
      "--mode",
      "json",
      "--no-session",
      "-p",
      "hi",
    ],
    cleanup: () => rmSync(home, { recursive: true, force: true }),
  };
}
