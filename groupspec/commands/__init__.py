"""One module per subcommand. Each defines::

    NAME: str                      # the subcommand, e.g. "assign"
    HELP: str                      # one line for `groupspec --help`
    def configure(parser): ...     # add its arguments to an argparse parser
    def run(args) -> int: ...      # 0 held, 1 violation, 2 bad input (or raise InputError)

``groupspec.cli`` finds them with pkgutil, so adding a command is adding a module.
"""
