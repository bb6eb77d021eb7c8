# The release's error codes: the score a failure gets (docs/algorithm.md section 4).


class ErrorCodes:
    NO_DIFF_BLOCKS_ERROR = -0.4
    NO_VALID_CHANGE = -0.3
    EXECUTION_ERROR = -0.2
    VALIDATION_FAILED = -0.1
    EXECUTION_FAILED = EXECUTION_ERROR
    TIMEOUT_OCCURRED = EXECUTION_ERROR
    NO_SOLUTION_FOUND = EXECUTION_ERROR


FORMAT_ERRORS = [ErrorCodes.NO_DIFF_BLOCKS_ERROR, ErrorCodes.NO_VALID_CHANGE]
EXECUTION_ERRORS = [ErrorCodes.EXECUTION_ERROR, ErrorCodes.VALIDATION_FAILED]
ALL_ERROR_CODES = FORMAT_ERRORS + EXECUTION_ERRORS


class ErrorThresholds:
    ERROR_BOUNDARY = -0.1

    @classmethod
    def is_error_code(cls, value):
        return value <= cls.ERROR_BOUNDARY


class DefaultValues:
    DEFAULT_ERROR_SCORE = ErrorCodes.EXECUTION_ERROR
    DEFAULT_KNOWN_BOUND = 1

    @classmethod
    def get_error_score(cls, known_bound=None):
        return cls.DEFAULT_ERROR_SCORE


class ErrorMessages:
    MESSAGES = {
        ErrorCodes.NO_DIFF_BLOCKS_ERROR: "the response holds no SEARCH/REPLACE block",
        ErrorCodes.NO_VALID_CHANGE: "the child equals an existing program (no valid change)",
        ErrorCodes.EXECUTION_ERROR: "the program failed: crashed, timed out or saved no solution",
        ErrorCodes.VALIDATION_FAILED: "the solution failed validation",
    }

    @classmethod
    def get_message(cls, error_code):
        return cls.MESSAGES.get(error_code, f"not an error code: {error_code}")
