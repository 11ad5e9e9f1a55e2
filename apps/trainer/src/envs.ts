/**
 * The trainer names environments through the shared registry in @troupe/envs (the API serves
 * published teams through the same one).
 */
import type { Team } from "@troupe/core";
import {
  configuredTeam,
  createEnvironment as createRegistered,
  type RegisteredEnvironment,
} from "@troupe/envs";

import { type Recipe, RecipeError } from "./recipe.ts";

export type TrainerEnvironment = RegisteredEnvironment;

/** The environment's team for a recipe: its specialisation, with the recipe's turn overrides. */
export const recipeTeam = configuredTeam;

/** The recipe's environment and its team. */
export function recipeEnvironment(recipe: Recipe): { trainerEnv: TrainerEnvironment; team: Team } {
  const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
  return { trainerEnv, team: recipeTeam(trainerEnv, recipe.team) };
}

export function createEnvironment(name: string, options: Record<string, unknown>): TrainerEnvironment {
  try {
    return createRegistered(name, options);
  } catch (error) {
    throw new RecipeError(`recipe: ${(error as Error).message}`);
  }
}
