/**
 * What the registry suites share: a FileStore in a temp folder for the whole file (removed after
 * it), the tiny team's publish input (built once, before the first test), and the registry on it.
 */
import { afterAll, beforeAll } from "vitest";
import { createTeamRegistry, type PublishInput, type TeamRegistry } from "../src/index.ts";
import { tempStore, tinyTeamInput } from "./fixtures.ts";

export interface RegistryFixture {
  readonly store: ReturnType<typeof tempStore>["store"];
  readonly root: string;
  readonly registry: TeamRegistry;
  /** The tiny team's publish input (ready from the first test on). */
  readonly input: PublishInput;
}

/** Call at the top of a suite file: the hooks that make and remove the fixture. */
export function registryFixture(): RegistryFixture {
  const tmp = tempStore();
  let input: PublishInput | undefined;
  beforeAll(async () => {
    input = await tinyTeamInput("pathfinders");
  });
  afterAll(() => tmp.cleanup());
  return {
    store: tmp.store,
    root: tmp.root,
    registry: createTeamRegistry(tmp.store),
    get input() {
      if (input === undefined) throw new Error("registryFixture: the input is built before the first test");
      return input;
    },
  };
}
