// pgjdbc against a running Tabula. Usage: java -cp postgresql.jar:. ClientsTest PORT
import java.sql.*;

public class ClientsTest {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/tabula";
        try (Connection c = DriverManager.getConnection(url, "tabula", "")) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE jv (k bigint PRIMARY KEY, name text, price double precision)");
            }
            // Enough executions of one PreparedStatement to switch pgjdbc to server-side prepared statements.
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jv VALUES (?, ?, ?)")) {
                for (int i = 0; i < 10; i++) {
                    p.setLong(1, i);
                    p.setString(2, "n" + i);
                    p.setDouble(3, i * 1.5);
                    check(p.executeUpdate() == 1, "insert count");
                }
            }
            try (PreparedStatement p = c.prepareStatement("SELECT name, price FROM jv WHERE k = ?")) {
                for (int i = 0; i < 10; i++) {
                    p.setLong(1, i);
                    try (ResultSet r = p.executeQuery()) {
                        check(r.next(), "row " + i);
                        check(r.getString(1).equals("n" + i), "name");
                        check(r.getDouble(2) == i * 1.5, "price");
                    }
                }
            }
            // executeBatch reports each statement's row count: Describe of a statement that returns no rows
            // must answer NoData (Hibernate and Spring check these counts).
            try (PreparedStatement p = c.prepareStatement("UPDATE jv SET price = ? WHERE k = ?")) {
                for (long k : new long[] {2, 3, 99}) {
                    p.setDouble(1, 7.5);
                    p.setLong(2, k);
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                check(counts.length == 3 && counts[0] == 1 && counts[1] == 1 && counts[2] == 0,
                      "batch counts " + java.util.Arrays.toString(counts));
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jv VALUES (?, ?, ?)")) {
                for (long k = 100; k < 103; k++) {
                    p.setLong(1, k);
                    p.setString(2, "b" + k);
                    p.setDouble(3, 0);
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                check(java.util.Arrays.equals(counts, new int[] {1, 1, 1}), "insert batch counts " + java.util.Arrays.toString(counts));
            }
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("UPDATE jv SET name = 'tx' WHERE k = 1");
            }
            c.commit();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT name FROM jv WHERE k = 1")) {
                check(r.next() && r.getString(1).equals("tx"), "committed update");
            }
            try (Statement s = c.createStatement()) {
                s.execute("INSERT INTO jv VALUES (1, 'dup', 0)");
                throw new AssertionError("duplicate accepted");
            } catch (SQLException e) {
                check("23505".equals(e.getSQLState()), "sqlstate " + e.getSQLState());
            }
        }
        System.out.println("java clients ok");
    }
}
