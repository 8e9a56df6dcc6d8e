import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BOX_GID, BOX_UID } from "../../runner/boundary/box/layout.ts";

/**
 * A throwaway $HOME for a test box, owned by the box user the way the runner
 * prepares it, with pi pointed at a scripted model.
 */
export interface TestHome {
  dir: string;
  cleanup(): Promise<void>;
}

export async function makeHome(): Promise<TestHome> {
  const dir = await mkdtemp(join(tmpdir(), "roster-test-home-"));
  await chmod(dir, 0o755);
  for (const sub of ["workspace", "session", "agent", "store"]) {
    await mkdir(join(dir, sub), { recursive: true });
  }
  await chownTree(dir);
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Points pi at an OpenAI-compatible endpoint (the scripted model) with retries off. */
export async function configureModel(home: string, baseUrl: string): Promise<void> {
  const agent = join(home, "agent");
  await writeFile(
    join(agent, "models.json"),
    JSON.stringify({
      providers: {
        scripted: {
          baseUrl,
          api: "openai-completions",
          apiKey: "test-key-not-secret",
          models: [{ id: "scripted-1", contextWindow: 32000, maxTokens: 1024 }],
        },
      },
    }),
  );
  await writeFile(
    join(agent, "settings.json"),
    JSON.stringify({
      defaultProvider: "scripted",
      defaultModel: "scripted-1",
      retry: { enabled: false },
    }),
  );
  await chownTree(home);
}

async function chownTree(dir: string): Promise<void> {
  const { readdir } = await import("node:fs/promises");
  await chown(dir, BOX_UID, BOX_GID);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(path);
    else await chown(path, BOX_UID, BOX_GID);
  }
}
