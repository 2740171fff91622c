"""A throwaway operation, added through the registry by test_adding_an_operation."""
