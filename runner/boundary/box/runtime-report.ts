import type { BoxEngine } from "./engine.ts";
import { DEFAULT_RUNTIME } from "./runtime.ts";
import { type EngineRuntime, engineRuntime } from "./runtime-check.ts";
import { findRunsc } from "./runtime-setup.ts";

/**
 * `roster box doctor`'s runtime lines: which runtime each worker's box will
 * get (from the loaded config) and whether the engine has it with the flags
 * the door needs. It only reports; `--fix` (runtime-setup.ts) changes things.
 */

/** Which runtime boxes get, as the loaded config says: org.toml's, and each worker's narrowed one. */
export interface WantedRuntimes {
  org: string;
  workers: Record<string, string>;
}

export interface RuntimeReport extends WantedRuntimes {
  /** Every runtime some box needs is registered with the flags roster needs. */
  ok: boolean;
  /** The engine's answer about runsc, asked whether or not a box needs it. */
  runsc: EngineRuntime & { installed?: string };
  error?: string;
}

export async function runtimeReport(
  engine: BoxEngine,
  wanted: WantedRuntimes,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RuntimeReport> {
  const installed = await findRunsc(env);
  const runsc = { ...(await engineRuntime(engine, "runsc")), ...(installed ? { installed } : {}) };
  const needed = new Set([wanted.org, ...Object.values(wanted.workers)]);
  needed.delete(DEFAULT_RUNTIME);
  // runsc is the only other runtime the config accepts
  const ok = !needed.size || (runsc.registered && runsc.missingArgs.length === 0);
  return { ...wanted, ok, runsc };
}

/** The workers whose boxes get `runtime`, or "every worker" when all do. */
function whose(report: WantedRuntimes, runtime: string): string {
  const names = Object.keys(report.workers);
  const these = names.filter((name) => report.workers[name] === runtime);
  if (!names.length) return report.org === runtime ? "every box (org.toml)" : "";
  return these.length === names.length ? "every worker's box" : these.join(", ");
}

export function formatRuntime(report: RuntimeReport): string[] {
  const mark = (ok: boolean) => (ok ? "ok " : "-- ");
  if (report.error) return [`${mark(false)} runtime  ${report.error}`];
  const lines: string[] = [];
  const runc = whose(report, DEFAULT_RUNTIME);
  if (runc) lines.push(`${mark(true)} runtime  runc for ${runc}`);
  const gvisor = whose(report, "runsc");
  const { runsc } = report;
  const flags = `${runsc.path ?? "?"} ${(runsc.runtimeArgs ?? []).join(" ")}`.trim();
  if (gvisor) {
    if (!runsc.registered)
      lines.push(
        `${mark(false)} runtime  runsc (gVisor) for ${gvisor} is not registered with the engine: those boxes are refused; ${runsc.installed ? "" : "`apt-get install runsc`, then "}\`roster box doctor --fix\``,
      );
    else if (runsc.missingArgs.length)
      lines.push(
        `${mark(false)} runtime  runsc (gVisor) for ${gvisor} is registered (${flags}) without ${runsc.missingArgs.join(" and ")}: those boxes are refused; \`roster box doctor --fix\``,
      );
    else lines.push(`${mark(true)} runtime  runsc (gVisor) for ${gvisor}: registered (${flags})`);
  } else if (runsc.registered) {
    lines.push(`    gvisor   runsc registered (${flags}); no box asks for it`);
  }
  return lines;
}
