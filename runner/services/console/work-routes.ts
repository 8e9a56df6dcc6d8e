import type { Context, Hono } from "hono";
import { restoreStore } from "../../boundary/store/restore.ts";
import { listSnapshots } from "../../boundary/store/snapshots.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { readTasks } from "../../records/task-list/store.ts";
import { cancelTask, requeueTask, retireTemplate } from "../../work/tasks/operator-edits.ts";
import { type ConsoleEnv, WORKER_NAME as NAME } from "./env.ts";
import { type Html, page, plain } from "./html.ts";
import { confirmPart, restoredPart, storePart } from "./pages/store.ts";
import { tasksPart } from "./pages/tasks.ts";

/**
 * The pages where a person changes the work, beside approvals: tasks and
 * schedules (cancel, requeue, retire) and the store (restore, undo). Every
 * form posts with the session's token session.ts checks; each change is the CLI's own
 * function, done "by console".
 */
type Env = ConsoleEnv;
const CHANNEL = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function workRoutes(
  app: Hono<Env>,
  deps: { paths: RosterPaths; workers: () => string[] },
): void {
  const { paths, workers } = deps;
  const show = (c: Context<Env>, title: string, current: string, body: Html) =>
    c.html(page({ title, current, csrf: c.get("token"), body }));

  app.get("/tasks", (c) =>
    show(c, "Tasks and schedules", "/tasks", tasksPart(paths, workers(), c.get("token"))),
  );

  // cancel, requeue and retire: the CLI's own edits (tasks/operator-edits.ts), by "console"
  app.post("/tasks/:worker/:id/:verb", async (c) => {
    const { worker, id, verb } = c.req.param();
    const known = NAME.test(worker) && workers().includes(worker);
    const template = /^r-[0-9a-z-]{1,64}$/.test(id);
    const task = /^t-[0-9a-f]{4,64}$/.test(id);
    const fits =
      (template && verb === "retire") || (task && (verb === "cancel" || verb === "requeue"));
    if (!known || !fits) return c.html(plain("Not found", "No such task."), 404);
    const list = readTasks(paths, worker);
    const found = template
      ? list.recurring?.some((one) => one.id === id)
      : list.tasks.some((one) => one.id === id);
    if (!found) return c.html(plain("Not found", `No ${id} for ${worker}.`), 404);
    try {
      if (verb === "retire") await retireTemplate(paths, id);
      else await (verb === "cancel" ? cancelTask : requeueTask)(paths, { id, worker }, "console");
    } catch (error) {
      return c.html(plain("Not done", errorMessage(error)), 409);
    }
    return c.redirect(`/tasks#${id}`, 303);
  });

  app.get("/store", (c) => show(c, "Store", "/store", storePart(paths, workers())));

  // a restore is asked first (GET shows the question), then posted with the CSRF token
  const storeTarget = (c: Context<Env>) => {
    const { worker, name } = c.req.param();
    const channel = c.req.query("channel");
    if (!worker || !NAME.test(worker) || !workers().includes(worker)) return undefined;
    if (channel !== undefined && !CHANNEL.test(channel)) return undefined;
    const target = { worker, ...(channel ? { channel } : {}) };
    const snapshot = listSnapshots(paths, target).find((one) => one.name === name);
    return snapshot ? { target, snapshot } : undefined;
  };
  app.get("/store/:worker/:name/restore", (c) => {
    const found = storeTarget(c);
    if (!found) return c.html(plain("Not found", "No such snapshot."), 404);
    return show(c, "Restore?", "/store", confirmPart(found.target, found.snapshot, c.get("token")));
  });
  app.post("/store/:worker/:name/restore", async (c) => {
    const found = storeTarget(c);
    if (!found) return c.html(plain("Not found", "No such snapshot."), 404);
    try {
      const result = await restoreStore(paths, found.target, { from: found.snapshot.name });
      return show(c, "Restored", "/store", restoredPart(found.target, result, c.get("token")));
    } catch (error) {
      return c.html(plain("Not restored", errorMessage(error)), 409);
    }
  });
}
