/**
 * The smallest recipe that parses: a name, an environment and a strategy, every other field its
 * schema default. Tests of the recipe schema and of what the trainer derives from a recipe start here.
 */
export const MINIMAL_RECIPE = `
name: demo
environment: { name: plan-path }
strategy: { name: atgrpo }
`;
