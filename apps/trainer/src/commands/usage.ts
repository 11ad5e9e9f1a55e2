/** What `trainer --help` and `trainer <command> --help` print. */

const RECIPE_FLAGS = `  --recipe  a recipe name from apps/trainer/recipes (default: "default") or a YAML path
  --set     override a recipe field, e.g. --set train.steps=20 --set strategy.candidates=8`;

/** Each command's usage: `<command> --help` prints its own, `help` all of them. */
export const USAGES: Record<string, string> = {
  train: `usage: trainer train [--recipe <name|path>] [--set key=value]... [--run <id>] [--resume] [--mode m] [--worker id]
${RECIPE_FLAGS}
  --run     run id (default: <recipe name>-<UTC timestamp>); the run is in <store>/runs/<id>/
  --resume  continue a run from its newest committed step (the newest run of the recipe without
            --run); with --set train.steps=<n> a finished run goes on to n steps;
            --set store=<uri> says where the run is (no other field is taken)
  --mode    all (default: the recipe's mode) | learner | rollout: asynchronous RL through the store;
            the learner and its rollout workers share --run, each worker has its own --worker <id>
  --lease-seconds  a rollout worker's hold on a task before another worker may take it over (60)
  --idle-seconds   a rollout worker exits with an error after this long with nothing to sample and
                   no new committed step, e.g. when the learner died (600)
Steps are numbered from 0, as in metrics.jsonl, eval --step and publish --step.`,
  sft: `usage: trainer sft [--recipe <name|path>] [--set key=value]...
  only the recipe's supervised warm start (cached in the store, resumable), then one evaluation
${RECIPE_FLAGS}`,
  eval: `usage: trainer eval [--recipe <name|path>] [--run <id>] [--step <n>] [--tasks <n>]
  held-out success of a run's checkpoints
  --recipe  the recipe whose store holds the run (and whose newest run is the default)
  --run     run id (default: the newest run of the recipe with a committed step)
  --step    a committed step with checkpoints (default: the newest committed step)
  --tasks   held-out tasks (default: the run's train.evalTasks)`,
  compare: `usage: trainer compare [--recipe <name|path>] [--set key=value]... [--seeds 1,2,3] [--arms a,b] [--id <id>] [--eval-tasks 500] [--finished]
${RECIPE_FLAGS}
  --seeds       seeds of every arm (default 1,2,3)
  --arms        the arms to run (default: all)
  --id          the compare's id: the same id continues it, reading finished runs back
  --eval-tasks  held-out tasks each run is evaluated on (default 500)
  --finished    run nothing: tabulate the arms × seeds of --id that have finished`,
  sweep: `usage: trainer sweep --grid <name|file.yaml> [--seeds 1,2,3] [--recipe <name|path>] [--set key=value]... [--id <id>] [--eval-tasks 500]
  --grid        a sweep's grid file: a name from apps/trainer/sweeps or a YAML path (docs/training.md, "Sweeps")
${RECIPE_FLAGS}
  --seeds       seeds of every point
  --id          the sweep's id: the same id continues it, reading finished runs back
  --eval-tasks  held-out tasks each run is evaluated on (default 500, greedy)`,
  report: `usage: trainer report --run <id>[,<id>…] [--recipe <name|path>] [--store <uri>] [--out <dir>]
  the HTML page of runs (or a compare's or sweep's id) and its charts as SVG files
  --store   where the runs are (default: the recipe's store)
  --out     also copy the page to this folder`,
  publish: `usage: trainer publish --run <id> --name <team> [--step <n>] [--alias <a>] [--recipe <name|path>] [--store <uri>] [--tasks <n>] [--no-eval]
  a run's checkpoints at one step → a published team version in the same store
  --step    a committed step with checkpoints (default: the newest)
  --alias   also point <team>@<alias> at the new version
  --store   where the run is (default: the recipe's store)
  --no-eval publish without an evaluation when the step recorded none`,
};
/** The first line of every command's usage. */
export const USAGE = Object.values(USAGES)
  .map((u) => u.split("\n")[0]!.replace(/^usage: /, "       "))
  .join("\n")
  .replace(/^ {7}/, "usage: ")
  .concat("\n  trainer <command> --help describes one command");
