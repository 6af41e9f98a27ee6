// Carrier simulators (a simulated Twilio caller) for tests, the sandbox call command and load tests.
export {};
