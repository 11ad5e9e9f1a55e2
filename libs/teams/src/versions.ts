/**
 * A team's versions in the store: which are published (have a manifest), which numbers are taken
 * (claimed, published or not), and one version's manifest, checked against its key.
 */
import { getIfPresent, IntegrityError, type ObjectStore } from "@troupe/storage";
import type { z } from "zod";
import { MANIFEST_FILE, manifestKey, parseVersionKey, versionsPrefix } from "./layout.ts";
import { decodeTeamManifest, type TeamManifest, TeamNameSchema } from "./manifest.ts";

export class TeamNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TeamNotFoundError";
  }
}

/** `value` when the schema accepts it; else an error `<kind> "<value>": <what is wrong>`. */
export function checkNamed(
  schema: z.ZodType<string>,
  kind: string,
  value: string,
  error: new (message: string) => Error = Error,
): string {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new error(`${kind} "${value}": ${parsed.error.issues[0]!.message}`);
  return value;
}

/** The name if it is a valid team name; else TeamNotFoundError naming what is wrong. */
export const checkName = (name: string): string =>
  checkNamed(TeamNameSchema, "team", name, TeamNotFoundError);

/** Versions with a manifest (ascending), and the highest taken (claimed or published) version number. */
export async function versionsOf(
  store: ObjectStore,
  name: string,
): Promise<{ published: number[]; highestTaken: number }> {
  const published: number[] = [];
  let highestTaken = 0;
  for (const { key } of await store.list(versionsPrefix(name))) {
    const parsed = parseVersionKey(key);
    if (parsed === undefined || parsed.name !== name) continue;
    highestTaken = Math.max(highestTaken, parsed.version);
    if (parsed.file === MANIFEST_FILE) published.push(parsed.version);
  }
  return { published: published.sort((a, b) => a - b), highestTaken };
}

/** One version's manifest; TeamNotFoundError when it has none, IntegrityError when it names another version. */
export async function readManifest(store: ObjectStore, name: string, version: number): Promise<TeamManifest> {
  const key = manifestKey(name, version);
  const bytes = await getIfPresent(store, key);
  if (bytes === undefined) throw new TeamNotFoundError(`team "${name}" has no version ${version}`);
  const manifest = decodeTeamManifest(bytes, key);
  if (manifest.name !== name || manifest.version !== version) {
    throw new IntegrityError(
      key,
      `the manifest says ${manifest.name} v${manifest.version}, its key says ${name} v${version}`,
    );
  }
  return manifest;
}
