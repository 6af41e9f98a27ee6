// Protocol-faithful provider simulators (tests, sandbox mode, load tests). Each helper adds its export here.
export {};
