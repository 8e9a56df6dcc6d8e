import { chown, lchown, lstat, mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { BOX_CA, BOX_CA_BUNDLE, SENTINEL } from "../../boundary/box/box-env.ts";
import type { BoxMount } from "../../boundary/box/container-spec.ts";
import { BOX_HOME, type BoxUser, boxUser } from "../../boundary/box/layout.ts";
import { chownStoreLocks } from "../../boundary/store/store-lock.ts";
import { piAgentConfig } from "../../ground/config/model.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import { readLive, scheduleView } from "../../records/task-list/store.ts";
import { type AheadClones, type ClonedRepos, cloneRunRepos } from "../repos/clone.ts";

/**
 * The run's $HOME: one tree, where who wrote it decides the mode.
 *
 *   ~            rw  fresh each run: workspace/, session/, agent/ (pi config), dotfiles
 *   ~/store      rw  the worker's durable folder, survives runs
 *   ~/mnt/<c>    ro|rw  granted host folders and repos
 *   ~/self       ro  config/ (worker.toml, identity.md), schedule.json, journal/, runs/
 *
 * The box runs as the image's non-root user; the host prepares everything for
 * that uid (chown when the runner is root, as CI is).
 */

/** A host folder a box writes that outlives it, what a person calls it, and its limit. */
export interface DurableFolder {
  path: string;
  what: string;
  /** Folders measured with it as one (a run's clones beside its $HOME). */
  with?: string[];
  /** Its own bound and the setting that names it; the store's `[store] max_size` when unset. */
  limit?: { bytes: number; setting: string };
  /** The filesystem it is on, as a person calls it; "the data filesystem" when unset. */
  filesystem?: string;
}

export interface RunHome {
  home: string;
  mounts: BoxMount[];
  user: BoxUser;
  /** Gated repos cloned for this run (ROSTER_REPOS_JSON, and the record's `repos`). */
  repos: Omit<ClonedRepos, "mounts">;
  /**
   * The host folders the box writes that outlive it: its store, a session's
   * channel store, and its run folder's $HOME and clones (kept until
   * retention drops them, runs/retention.ts).
   */
  durable: DurableFolder[];
}

export interface RunHomeOptions {
  paths: RosterPaths;
  worker: WorkerView;
  runDir: string;
  runId: string;
  /** A session's channel: its record read-only at ~/channel, the worker's store for it at ~/channel/store. */
  channel?: string;
  /** A server's clones made ahead of their runs (repos/spare-clones.ts). */
  spares?: AheadClones | undefined;
}

/** The host folders a run's $HOME is made of. */
interface HomeFolders {
  home: string;
  self: string;
  store: string;
  journal: string;
}

export async function buildRunHome(options: RunHomeOptions): Promise<RunHome> {
  const { paths, worker, runDir, runId, channel } = options;
  const user = boxUser();
  const folders: HomeFolders = {
    home: join(runDir, "home"),
    self: join(runDir, "self"),
    store: join(paths.data, "workers", worker.name, "store"),
    // the worker's journal, live: what became of its proposals, including during this run
    journal: join(paths.data, "workers", worker.name, "journal"),
  };
  const { home, store } = folders;
  await makeHomeTree(options, folders);
  const durable: DurableFolder[] = [
    { path: store, what: "its store" },
    // the store and mounts sit on empty mountpoints here: this is what the box wrote itself
    {
      path: home,
      with: [join(runDir, "repos")],
      what: "its $HOME and repo clones",
      limit: { bytes: worker.store.homeMaxBytes, setting: "[store] home_max_size" },
      filesystem: "the run folders' filesystem",
    },
  ];
  const channelMounts = channel ? await channelFolders(options, channel, user, durable) : [];
  const cloned = await cloneRunRepos({
    mounts: worker.mounts,
    runDir,
    runId,
    home,
    worker: worker.name,
    spares: options.spares,
  });
  // the box runs as the image's user: a root runner hands it what it writes
  if (process.getuid?.() === 0) {
    for (const repo of cloned.repos) await chownTree(join(runDir, "repos", repo.connection), user);
    await chownTree(home, user);
    await chown(store, user.uid, user.gid);
    // boxes write .locks: walked through open folders, never by a path (store-lock.ts)
    await chownStoreLocks(store, user);
  }
  const mounts = [
    ...homeMounts(options, folders),
    ...cloned.mounts,
    ...channelMounts,
    ...caMounts(paths),
  ];
  return { home, mounts, user, repos: { repos: cloned.repos, record: cloned.record }, durable };
}

/** The fresh $HOME's folders and pi's config, the store's lock folder, and ~/self's contents. */
async function makeHomeTree(options: RunHomeOptions, folders: HomeFolders): Promise<void> {
  const { paths, worker } = options;
  const { home, self, store, journal } = folders;
  for (const dir of [
    "workspace",
    "session",
    "agent",
    "store",
    ...worker.mounts.map((m) => `mnt/${m.name}`),
  ]) {
    await mkdir(join(home, dir), { recursive: true });
  }
  if (worker.model) {
    const agent = piAgentConfig(worker.model, SENTINEL);
    await writeFile(join(home, "agent/models.json"), `${JSON.stringify(agent.models, null, 2)}\n`);
    await writeFile(
      join(home, "agent/settings.json"),
      `${JSON.stringify(agent.settings, null, 2)}\n`,
    );
  }
  await mkdir(join(store, ".locks"), { recursive: true });
  for (const dir of ["config", "runs", "journal"])
    await mkdir(join(self, dir), { recursive: true });
  // the task list as it stands; file_task/set_tasks rewrite this file in place during the run
  await writeFile(join(self, "schedule.json"), scheduleView(readLive(paths, worker.name)));
  await mkdir(journal, { recursive: true });
}

/** A session's channel: its record read-only at ~/channel, its own store (durable) inside it. */
async function channelFolders(
  options: RunHomeOptions,
  channel: string,
  user: BoxUser,
  durable: DurableFolder[],
): Promise<BoxMount[]> {
  const { paths, worker } = options;
  const record = join(paths.data, "channels", channel);
  const channelStore = join(paths.data, "workers", worker.name, "channel-stores", channel);
  // the store's mountpoint must exist inside the read-only channel mount
  await mkdir(join(record, "store"), { recursive: true, mode: 0o755 });
  await mkdir(channelStore, { recursive: true });
  durable.push({ path: channelStore, what: `its store for channel ${channel}` });
  if (process.getuid?.() === 0) await chown(channelStore, user.uid, user.gid);
  return [
    { source: record, target: `${BOX_HOME}/channel`, readOnly: true },
    { source: channelStore, target: `${BOX_HOME}/channel/store`, readOnly: false },
  ];
}

/** $HOME, the store, ~/self and what it shows, and the worker's ungated folders. */
function homeMounts(options: RunHomeOptions, folders: HomeFolders): BoxMount[] {
  const { paths, worker } = options;
  return [
    { source: folders.home, target: BOX_HOME, readOnly: false },
    { source: folders.store, target: `${BOX_HOME}/store`, readOnly: false },
    { source: folders.self, target: `${BOX_HOME}/self`, readOnly: true },
    { source: worker.dir, target: `${BOX_HOME}/self/config`, readOnly: true },
    {
      source: join(paths.state, "runs", worker.name),
      target: `${BOX_HOME}/self/runs`,
      readOnly: true,
    },
    { source: folders.journal, target: `${BOX_HOME}/self/journal`, readOnly: true },
    ...worker.mounts
      .filter((mount) => !mount.gated)
      .map((mount) => ({
        source: mount.path,
        target: `${BOX_HOME}/mnt/${mount.name}`,
        readOnly: mount.readOnly,
      })),
  ];
}

/** The CA the box trusts for the gateway's interception, and the bundle with it. */
function caMounts(paths: RosterPaths): BoxMount[] {
  return [
    { source: join(paths.ca, "ca.crt"), target: BOX_CA, readOnly: true },
    { source: join(paths.ca, "bundle.crt"), target: BOX_CA_BUNDLE, readOnly: true },
  ];
}

/**
 * Hands a tree to the box's user. Some trees (the store's .locks) are written
 * by boxes, so nothing is followed: a symlink gets a new owner itself (lchown),
 * never the host file it names, and is never descended into.
 */
async function chownTree(dir: string, user: BoxUser): Promise<void> {
  await lchown(dir, user.uid, user.gid);
  if (!(await lstat(dir)).isDirectory()) return;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(path, user);
    else await lchown(path, user.uid, user.gid);
  }
}
