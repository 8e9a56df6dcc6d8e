import { findTask, OPEN_STATES, readTasks } from "../../../records/task-list/store.ts";
import {
  taskDetail,
  taskLine,
  templateDetail,
  templateLine,
} from "../../../work/tasks/list-view.ts";
import { fileOperatorTask } from "../../../work/tasks/operator-add.ts";
import {
  cancelTask,
  findTemplate,
  requeueTask,
  retireTemplate,
} from "../../../work/tasks/operator-edits.ts";
import type { CommandContext } from "../context.ts";

/** `/task ls | show | add | rm | requeue`: the worker's list, as `roster task` edits it. */
export async function taskAnswer(
  context: CommandContext,
  sub: string,
  args: Record<string, string>,
): Promise<string> {
  const { paths, worker, asker } = context;
  if (sub === "ls") return listed(context);
  if (sub === "add") {
    const { prompt = "", cron, every, ceiling } = args;
    const flags = {
      ...(cron ? { cron } : {}),
      ...(every ? { every } : {}),
      ...(ceiling ? { ceiling } : {}),
    };
    return (await fileOperatorTask(paths, worker, prompt, flags, asker.user)).trim();
  }
  const id = args.id ?? "";
  if (id.startsWith("r-")) {
    const template = findTemplate(paths, id);
    if (template.worker !== worker)
      return `${template.id} is ${template.worker}'s, not ${worker}'s`;
    if (sub === "show") return templateDetail(template);
    if (sub === "rm") return retireTemplate(paths, template.id);
    return `${template.id} is recurring: it can't be requeued`;
  }
  const task = findTask(paths, id);
  if (task.worker !== worker) return `${task.id} is ${task.worker}'s, not ${worker}'s`;
  if (sub === "show") return taskDetail(task);
  if (sub === "rm") return cancelTask(paths, task, asker.user);
  return requeueTask(paths, task, asker.user);
}

function listed({ paths, worker }: CommandContext): string {
  const list = readTasks(paths, worker);
  const open = list.tasks.filter((task) => OPEN_STATES.has(task.state) || task.state === "blocked");
  const lines = open.map((task) => taskLine({ ...task, worker }));
  const recurring = (list.recurring ?? []).map((one) => templateLine({ ...one, worker }));
  if (!lines.length && !recurring.length) return `${worker} has no open tasks`;
  return [...lines, ...(recurring.length ? ["recurring:", ...recurring] : [])].join("\n");
}
