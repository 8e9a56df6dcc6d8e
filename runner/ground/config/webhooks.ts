import { ceilingProblem } from "./ceiling.ts";
import type { ConfigError } from "./config-error.ts";
import { locateLine } from "./locate.ts";
import type { WebhookRule } from "./webhook-schema.ts";

/**
 * What org.toml's `[[webhook]]` entries must say beyond their schema: a name
 * of their own (it is the path), a worker that exists, `events` only where
 * the sender names its events (GitHub), a ceiling a run may have.
 */
export function checkWebhooks(
  hooks: WebhookRule[] | undefined,
  workers: readonly string[],
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  const at = (index: number, field: string, message: string) =>
    errors.push({
      file: display,
      line: locateLine(text, `/webhook/${index}/${field}`),
      field: `webhook.${index}.${field}`,
      message,
    });
  const seen = new Map<string, number>();
  for (const [index, hook] of (hooks ?? []).entries()) {
    const earlier = seen.get(hook.name);
    if (earlier !== undefined)
      at(
        index,
        "name",
        `"${hook.name}" is already the name of [[webhook]] ${earlier}; each answers at its own /hooks/<name>`,
      );
    seen.set(hook.name, index);
    if (!workers.includes(hook.worker))
      at(index, "worker", `no worker named "${hook.worker}" (workers/${hook.worker}/worker.toml)`);
    if (hook.events && hook.scheme !== "github")
      at(
        index,
        "events",
        `only a "github" hook names its events (X-GitHub-Event); this one is "${hook.scheme}"`,
      );
    const problem = hook.ceiling === undefined ? undefined : ceilingProblem(hook.ceiling);
    if (problem) at(index, "ceiling", problem);
  }
}
