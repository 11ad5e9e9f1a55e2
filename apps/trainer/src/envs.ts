/**
 * The trainer names environments through the shared registry in @troupe/envs (the API serves
 * published teams through the same one).
 */
import {
  configuredTeam,
  createEnvironment as createRegistered,
  type RegisteredEnvironment,
} from "@troupe/envs";

export type TrainerEnvironment = RegisteredEnvironment;

/** The environment's team for a recipe: its specialisation, with the recipe's turn overrides. */
export const recipeTeam = configuredTeam;

export function createEnvironment(name: string, options: Record<string, unknown>): TrainerEnvironment {
  try {
    return createRegistered(name, options);
  } catch (error) {
    throw new Error(`recipe: ${(error as Error).message}`);
  }
}
