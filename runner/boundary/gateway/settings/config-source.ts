import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  type ConfigFile,
  configFilePaths,
  loadConfigRead,
  type ReadConfig,
} from "../../../ground/config/config-digest.ts";
import { type ConfigError, formatConfigError } from "../../../ground/config/config-error.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";

/**
 * The gateway's view of the config, re-read whenever a file changes (checked
 * at most every `intervalMs`). A changed config is taken only when it loads
 * without an error and passes its own `[[test]]` cases (the check is given
 * as `vet` by whoever builds the source: the policy room is above this one);
 * otherwise it is refused, the last good config stays live, and `status()`
 * and the refusal listeners say which config was refused and why. With no
 * good config yet (at start), a config that fails is kept as unusable: the
 * gateway then denies everything, and says why.
 */
export interface ConfigSourceOptions {
  vaultDir?: string;
  intervalMs?: number;
  /** What refuses a config that loads: its failed `[[test]]` cases (policy/vetting.ts). */
  vet?: (config: LoadedConfig) => ConfigError[];
}

/** The config that judges now, and the one on disk it would not take. */
export interface ConfigStatus {
  live: {
    digest: string;
    taken_at: string;
    /** False while there is no good config: everything is denied, for `reason`. */
    usable: boolean;
    reason?: string;
  };
  refused?: ConfigRefusal;
}

export interface ConfigRefusal {
  digest: string;
  at: string;
  /** Each as `file:line: field: message` (a failed case's field is `test.N`), the first PROBLEMS_SAID. */
  problems: string[];
  /** How many more there were. */
  more?: number;
}

/**
 * A refusal names at most this many problems, each cut to PROBLEM_CHARS: what
 * /healthz answers stays well under what its askers read (health.ts).
 */
const PROBLEMS_SAID = 20;
const PROBLEM_CHARS = 1_000;
const cut = (text: string) =>
  text.length > PROBLEM_CHARS ? `${text.slice(0, PROBLEM_CHARS - 1)}…` : text;

/** A config taken live: what was loaded, and exactly which files it was loaded from. */
export interface TakenConfig {
  config: LoadedConfig;
  files: ConfigFile[];
  digest: string;
}

export class ConfigSource {
  private current: LoadedConfig;
  private currentDigest: string;
  private files: ConfigFile[];
  private takenAt = new Date().toISOString();
  private refusal: ConfigRefusal | undefined;
  /** Why a config that is live can't be used (at start, with nothing good before it). */
  private readonly unusable = new WeakMap<LoadedConfig, string>();
  private fingerprint: string;
  private checkedAt = 0;
  private readonly listeners: Array<(config: LoadedConfig) => void> = [];
  private readonly takers: Array<(taken: TakenConfig) => void> = [];
  private readonly refusals: Array<(refusal: ConfigRefusal, live: string) => void> = [];
  private readonly vaultDir: string | undefined;
  private readonly intervalMs: number;

  constructor(
    readonly root: string,
    private readonly options: ConfigSourceOptions = {},
  ) {
    this.vaultDir = options.vaultDir;
    this.intervalMs = options.intervalMs ?? 500;
    this.fingerprint = this.fingerprintNow();
    const read = this.read();
    this.current = read.config;
    this.currentDigest = read.digest;
    this.files = read.files;
    const problem = this.problemsOf(read);
    if (problem?.vetted) this.unusable.set(read.config, problem.reason);
    // files that would not hold still are read again at the next check
    if (!read.settled) this.fingerprint = "";
  }

  private read(): ReadConfig {
    return loadConfigRead(this.root, this.vaultDir ? { vaultDir: this.vaultDir } : {});
  }

  /** Config files, plus which credentials exist (a stored credential enables its connection). */
  private fingerprintNow(): string {
    let vault = "";
    try {
      // hidden names are the vault's own temporaries and locks (a refresh), never a credential
      vault = this.vaultDir
        ? readdirSync(this.vaultDir)
            .filter((name) => !name.startsWith("."))
            .sort()
            .join(",")
        : "";
    } catch {
      // no vault yet
    }
    return `${fingerprintOf(this.root)}#${vault}`;
  }

  /**
   * Why a read config can't be taken: its load errors, or (when it loads)
   * the cases it fails; `vetted` marks the latter.
   */
  private problemsOf(
    read: ReadConfig,
  ): { problems: string[]; reason: string; vetted: boolean } | undefined {
    if (!read.settled) {
      const reason =
        "the config kept changing while the gateway read it, so everything is denied until it holds still";
      return { problems: [reason], reason, vetted: true };
    }
    if (read.config.errors.length) {
      const problems = read.config.errors.map(formatConfigError);
      return { problems, reason: brokenReasonOf(read.config) ?? "", vetted: false };
    }
    const failures = this.options.vet?.(read.config) ?? [];
    if (!failures.length) return undefined;
    const problems = failures.map(formatConfigError);
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : "";
    return {
      problems,
      reason: `the gateway's config fails its own [[test]] cases, so everything is denied: ${problems[0]}${more}`,
      vetted: true,
    };
  }

  get(): LoadedConfig {
    const now = Date.now();
    if (now - this.checkedAt >= this.intervalMs) {
      this.checkedAt = now;
      const next = this.fingerprintNow();
      if (next !== this.fingerprint) this.reread(next);
    }
    return this.current;
  }

  /** A change seen: the config it makes is taken, or refused with the last good one kept. */
  private reread(fingerprint: string): void {
    const read = this.read();
    // an edit still being written: nothing decided, read again at the next check
    if (!read.settled && this.usable()) return;
    this.fingerprint = read.settled ? fingerprint : "";
    const problem = this.problemsOf(read);
    if (problem && this.usable()) {
      // the same refused files seen again (a credential stored) are not said twice
      const repeated = this.refusal?.digest === read.digest;
      const said = problem.problems.slice(0, PROBLEMS_SAID);
      const refusal: ConfigRefusal = {
        digest: read.digest,
        at: new Date().toISOString(),
        problems: said.map(cut),
        ...(problem.problems.length > said.length
          ? { more: problem.problems.length - said.length }
          : {}),
      };
      this.refusal = refusal;
      if (!repeated) for (const listener of this.refusals) listener(refusal, this.currentDigest);
      return;
    }
    // nothing good before it: the newest config is live, usable or not
    this.current = read.config;
    this.currentDigest = read.digest;
    this.files = read.files;
    this.takenAt = new Date().toISOString();
    this.refusal = undefined;
    if (problem?.vetted) this.unusable.set(read.config, problem.reason);
    for (const listener of this.listeners) listener(this.current);
    for (const taker of this.takers) taker(this.taken());
  }

  private usable(): boolean {
    return !this.brokenReason(this.current);
  }

  private taken(): TakenConfig {
    return { config: this.current, files: this.files, digest: this.currentDigest };
  }

  /** The digest of the config that judges now (no re-read: the one `get()` last gave). */
  get digest(): string {
    return this.currentDigest;
  }

  onChange(listener: (config: LoadedConfig) => void): void {
    this.listeners.push(listener);
  }

  /** Told of the config live now, at once, and of each one taken after it. */
  onTaken(taker: (taken: TakenConfig) => void): void {
    this.takers.push(taker);
    taker(this.taken());
  }

  /** Told once of each config refused (with the digest of the one that stays live). */
  onRefused(listener: (refusal: ConfigRefusal, live: string) => void): void {
    this.refusals.push(listener);
  }

  /** What judges now and what was refused, after a check for a change. */
  status(): ConfigStatus {
    const config = this.get();
    const reason = this.brokenReason(config);
    return {
      live: {
        digest: this.currentDigest,
        taken_at: this.takenAt,
        usable: !reason,
        ...(reason ? { reason: cut(reason) } : {}),
      },
      ...(this.refusal ? { refused: this.refusal } : {}),
    };
  }

  /** One line for refusals when the live config can't be used, else undefined. */
  brokenReason(config: LoadedConfig = this.get()): string | undefined {
    return brokenReasonOf(config) ?? this.unusable.get(config);
  }
}

/** Why a loaded config can't be used (it has errors): everything is then denied. */
export function brokenReasonOf(config: LoadedConfig): string | undefined {
  const first = config.errors[0];
  if (!first) return undefined;
  const more = config.errors.length > 1 ? ` (and ${config.errors.length - 1} more)` : "";
  return `the gateway's config is broken, so everything is denied: ${formatConfigError(first)}${more}`;
}

/** Names, sizes and mtimes of every config file (the files a digest covers): any edit changes it. */
function fingerprintOf(root: string): string {
  const parts: string[] = [];
  for (const path of configFilePaths(root)) {
    try {
      const stat = statSync(join(root, path));
      parts.push(`${path}:${stat.size}:${stat.mtimeMs}`);
    } catch {
      // vanished between listing and stat: the next check sees it
    }
  }
  return parts.join("|");
}
