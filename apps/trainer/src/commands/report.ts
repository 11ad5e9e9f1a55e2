import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { openStore } from "@troupe/storage/node";
import { RecipeError } from "../recipe.ts";
import { loadRecipeFile } from "../recipe-files.ts";
import { writeRunReport } from "../reports/report.ts";
import { storeLocation } from "./cli.ts";

export interface ReportCommandContext {
  readonly workspaceRoot: string;
  readonly resolveRecipePath: (name: string) => string;
}

export async function commandReport(argv: string[], context: ReportCommandContext): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      run: { type: "string", multiple: true, default: [] },
      recipe: { type: "string", default: "default" },
      store: { type: "string" },
      out: { type: "string" },
    },
    strict: true,
  });
  const ids = values.run
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);
  if (ids.length === 0)
    throw new RecipeError("report: pass --run <id>[,<id>…] (runs, or a compare's or sweep's id)");
  const storeUri = values.store ?? (await loadRecipeFile(context.resolveRecipePath(values.recipe))).store;
  const store = openStore(storeUri, { cwd: context.workspaceRoot });
  const out = values.out ? resolve(process.env.INIT_CWD ?? process.cwd(), values.out) : undefined;
  const { folder, report } = await writeRunReport(store, ids, out);
  const where = storeLocation(store, `${folder}index.html`, process.env.INIT_CWD ?? process.cwd());
  process.stdout.write(
    `report of ${report.runIds.length} run(s): ${where} (${report.charts.length} charts as .svg beside it)\n`,
  );
  if (out) process.stdout.write(`copied to ${out}/\n`);
  return 0;
}
